package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.CounterOverflowException;
import dev.tally.Counters;
import dev.tally.Tally;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Blocking increments of one key sharing an {@code INCRBY} ({@link IncrBatches}), made
 * deterministic: the server is frozen (SIGSTOP) while the calls arrive, so the first two go out
 * alone (the most in flight on a key) and every later one waits for them; on thawing, the
 * waiting ones go together. Each test then checks the values callers got, the counter, and the
 * commands Redis ran ({@code INFO commandstats}).
 */
class IncrBatchesTest {
  private static final long MAX = Long.MAX_VALUE;
  private static RedisServer server;
  private static Tally tally;
  private Counters counters;

  @BeforeAll
  static void start() {
    server = RedisServer.start();
    tally = Tally.open(server.uri());
  }

  @AfterAll
  static void stop() {
    if (tally != null) {
      tally.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @BeforeEach
  void fresh() {
    counters = tally.counters("shared" + System.nanoTime());
  }

  /** What each increment returned (a value, or the exception's class), in submission order. */
  private record Outcome(List<Object> answers, long incrbys) {}

  /**
   * Increments "k" by {@code first[0]}, {@code first[1]} (the two in flight), then by each of
   * {@code then} from its own thread, started one after the other, all while the server is
   * frozen.
   */
  private Outcome incrementWhileFrozen(long[] first, long... then) throws InterruptedException {
    server.call("CONFIG", "RESETSTAT");
    Map<Integer, Object> answers = new ConcurrentHashMap<>();
    List<Thread> threads = new ArrayList<>();
    server.pause();
    try {
      int i = 0;
      for (long[] group : new long[][] {first, then}) {
        for (long delta : group) {
          int index = i++;
          Thread t = new Thread(() -> {
            try {
              answers.put(index, counters.incr("k", delta));
            } catch (RuntimeException e) {
              answers.put(index, e.getClass());
            }
          });
          t.start();
          threads.add(t);
          Thread.sleep(40); // one after the other: a known arrival order
        }
        Thread.sleep(150); // the group has reached the client's queue (or the socket)
      }
    } finally {
      server.resume();
    }
    for (Thread t : threads) {
      t.join(10_000);
    }
    List<Object> ordered = new ArrayList<>();
    for (int i = 0; i < threads.size(); i++) {
      ordered.add(answers.get(i));
    }
    String stats = server.info("commandstats").getOrDefault("cmdstat_incrby", "calls=0,");
    return new Outcome(ordered, Long.parseLong(stats.substring("calls=".length(), stats.indexOf(','))));
  }

  @Test
  void waitingIncrementsShareOneIncrbyAndEachGetsItsOwnValue() throws InterruptedException {
    Outcome o = incrementWhileFrozen(new long[] {1, 1}, 1, 1, 1, 1, 1, 1, 1, 1);
    assertThat(o.answers()).containsExactlyInAnyOrder(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L);
    assertThat(o.incrbys()).as("two alone, then one for the eight that waited").isEqualTo(3);
    assertThat(counters.get("k")).hasValue(10L);
  }

  @Test
  void aSharedIncrbyThatWouldOverflowIsSentAgainOneByOne() throws InterruptedException {
    counters.put("k", MAX - 5);
    Outcome o = incrementWhileFrozen(new long[] {1, 1}, 2, 2, 2, 2);
    // MAX-3, then +8 together would overflow: alone, the first +2 fits and the other three do not
    List<Object> waited = o.answers().subList(2, 6);
    assertThat(waited).containsExactly(MAX - 1, CounterOverflowException.class, CounterOverflowException.class,
        CounterOverflowException.class);
    assertThat(o.incrbys()).as("two alone, the refused shared one, then four alone").isEqualTo(7);
    assertThat(counters.get("k")).hasValue(MAX - 1);
  }

  @Test
  void aSumBeyond64BitsIsSentOneByOne() throws InterruptedException {
    long half = MAX / 2 + 1;
    Outcome o = incrementWhileFrozen(new long[] {0, 0}, half, half);
    assertThat(o.answers().subList(2, 4)).containsExactly(half, CounterOverflowException.class);
    assertThat(o.incrbys()).as("two alone, then each of the two on its own").isEqualTo(4);
    assertThat(counters.get("k")).hasValue(half);
  }

  @Test
  void incrementsOfOppositeSignsDoNotShare() throws InterruptedException {
    counters.put("k", MAX - 1);
    Outcome o = incrementWhileFrozen(new long[] {0, 0}, 1, -1, 1, -1, -1, -1, 1);
    // sent alone in this order, every step stays within range; +1 and +1 together would not
    assertThat(o.answers().subList(2, 9)).containsExactly(MAX, MAX - 1, MAX, MAX - 1, MAX - 2, MAX - 3, MAX - 2);
    assertThat(o.incrbys()).as("two alone, then +1 | -1 | +1 | -1 -1 -1 | +1").isEqualTo(7);
    assertThat(counters.get("k")).hasValue(MAX - 2);
  }

  @Test
  void anIncrementAloneIsOnePlainIncrby() throws InterruptedException {
    server.call("CONFIG", "RESETSTAT");
    assertThat(counters.incr("k", 7)).isEqualTo(7);
    assertThat(server.info("commandstats").keySet()).filteredOn(c -> !c.equals("cmdstat_config|resetstat")
        && !c.equals("cmdstat_info")).containsExactly("cmdstat_incrby");
    assertThat(server.info("commandstats").get("cmdstat_incrby")).startsWith("calls=1,");
  }
}
