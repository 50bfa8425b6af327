package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import dev.tally.Counters;
import dev.tally.FailurePolicy;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Redis going away mid-run: killed (connection refused) and restarted on the same port, or
 * frozen (connected, silent). Callers always get an answer within the timeout plus a margin: a
 * {@link StoreUnavailableException}, a {@link StoreTimeoutException}, or the fail-open answer
 * for a group configured so; and work resumes by itself once Redis is back.
 */
class OutageTest {
  private static final Duration TIMEOUT = Duration.ofMillis(500);
  /** The longest any call may take: the timeout and a generous margin for a loaded machine. */
  private static final long BOUND_MILLIS = TIMEOUT.toMillis() + 1500;

  private static RedisServer server;
  private Tally tally;
  private Counters counters;
  private Counters failOpen;
  private final AtomicInteger failOpenAnswers = new AtomicInteger();

  @BeforeAll
  static void start() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  @BeforeEach
  void open() {
    TallyListener listener = new TallyListener() {
      @Override
      public void onFailurePolicyApplied(String operation, String key, FailurePolicy policy, StoreException cause) {
        failOpenAnswers.incrementAndGet();
      }
    };
    tally = Tally.builder(server.uri() + "?timeout=" + TIMEOUT.toMillis() + "ms").listener(listener).build();
    counters = tally.counters("outage");
    failOpen = tally.counters("outage-views", FailurePolicy.FAIL_OPEN);
    counters.delete("k");
  }

  @AfterEach
  void close() {
    server.resume();
    if (!server.call("PING").equals("PONG")) {
      server.restart();
    }
    tally.close();
  }

  @Test
  void aKilledServerIsUnavailableAtOnceAndWorkResumesWhenItIsBack() {
    assertThat(counters.incr("k")).isEqualTo(1);
    server.kill();

    for (int i = 0; i < 10; i++) {
      assertThat(timed(() -> catchStoreFailure(() -> counters.incr("k"))))
          .isInstanceOfAny(StoreUnavailableException.class, StoreTimeoutException.class);
    }
    assertThat(timed(() -> failOpen.incr("episode:512", 1, 10))).isEqualTo(11); // default + delta
    assertThat(failOpenAnswers).hasValue(1);
    Throwable async = timed(() -> catchStoreFailure(() -> counters.async().incr("k").toCompletableFuture().join()));
    assertThat(async).isInstanceOf(StoreUnavailableException.class);

    server.restart();
    long resumedAfter = awaitSuccess(() -> counters.incr("k"));
    assertThat(resumedAfter).isLessThan(5_000);
    assertThat(counters.incr("k")).isPositive(); // a fresh server (no persistence): counting restarted
  }

  @Test
  void aFrozenServerTimesOutAndWhatWasSentMayStillApply() {
    assertThat(counters.incr("k")).isEqualTo(1);
    server.pause();

    long started = System.nanoTime();
    assertThat(timed(() -> catchStoreFailure(() -> counters.incr("k")))).isInstanceOf(StoreTimeoutException.class)
        .hasMessageContaining("may or may not have been applied");
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isGreaterThanOrEqualTo(TIMEOUT.toMillis() - 50);
    assertThat(timed(() -> failOpen.incr("episode:512", 1, 10))).isEqualTo(11);
    Throwable async = timed(() -> catchStoreFailure(() -> counters.async().incr("k").toCompletableFuture().join()));
    assertThat(async).isInstanceOf(StoreTimeoutException.class);

    server.resume();
    awaitSuccess(() -> counters.get("k"));
    // Both timed-out increments were on the wire, and the thawed server applied them: a timeout
    // is "may have applied", exactly as StoreTimeoutException says.
    assertThat(counters.incr("k")).isEqualTo(4);
  }

  @Test
  void concurrentCallersThroughAnOutageAllFinishInTimeAndResume() throws Exception {
    Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();
    AtomicLong slowest = new AtomicLong();
    AtomicLong successesAfterRestart = new AtomicLong();
    long restartAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
    long stopAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(6000);
    Thread[] workers = new Thread[4];
    for (int t = 0; t < workers.length; t++) {
      workers[t] = new Thread(() -> {
        while (System.nanoTime() < stopAt && successesAfterRestart.get() < 200) {
          long started = System.nanoTime();
          String outcome;
          try {
            counters.incr("k");
            outcome = "ok";
            if (System.nanoTime() > restartAt) {
              successesAfterRestart.incrementAndGet();
            }
          } catch (StoreException e) {
            outcome = e.getClass().getSimpleName();
            RedisServer.sleep(5);
          } catch (RuntimeException e) {
            outcome = "unexpected " + e;
          }
          slowest.accumulateAndGet(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started), Math::max);
          outcomes.computeIfAbsent(outcome, o -> new LongAdder()).increment();
        }
      }, "outage-worker-" + t);
      workers[t].start();
    }
    RedisServer.sleep(300);
    server.kill();
    RedisServer.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(restartAt - System.nanoTime())));
    server.restart();
    for (Thread w : workers) {
      w.join(10_000);
      if (w.isAlive()) {
        fail("a worker is still running: a call hangs");
      }
    }
    assertThat(outcomes.keySet()).allSatisfy(o -> assertThat(o).doesNotStartWith("unexpected"));
    assertThat(outcomes).containsKey("StoreUnavailableException");
    assertThat(successesAfterRestart.get()).as("outcomes %s", outcomes).isPositive();
    assertThat(slowest.get()).isLessThan(BOUND_MILLIS);
  }

  @Test
  void openingAStoreNobodyListensOnFailsFast() {
    long started = System.nanoTime();
    assertThatThrownBy(() -> Tally.open("redis://127.0.0.1:1?timeout=500ms"))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("cannot connect");
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).isLessThan(BOUND_MILLIS);
  }

  /** Runs {@code call}, failing the test if it takes longer than the bound. */
  private static <T> T timed(Supplier<T> call) {
    long started = System.nanoTime();
    T result = call.get();
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertThat(millis).as("call duration in ms").isLessThan(BOUND_MILLIS);
    return result;
  }

  /** The store failure {@code call} throws, unwrapped from an async stage's exception. */
  private static Throwable catchStoreFailure(Runnable call) {
    try {
      call.run();
    } catch (CompletionException e) {
      return e.getCause();
    } catch (StoreException e) {
      return e;
    }
    throw new AssertionError("expected a store failure");
  }

  /** Retries {@code call} until it succeeds; returns how long that took, in ms. */
  private static long awaitSuccess(Runnable call) {
    long started = System.nanoTime();
    long deadline = started + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try {
        call.run();
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
      } catch (StoreException e) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("Redis is back but calls still fail after 10 s", e);
        }
        RedisServer.sleep(20);
      }
    }
  }
}
