package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.TransactionResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Many threads on the same keys, with totals checked exactly. Each case is a race that a
 * read-modify-write implementation loses; a store passes only if its operations are atomic.
 */
public abstract class CounterConcurrencyContract extends TallyFixture {
  /** Threads per case: more than cores, so operations interleave and get preempted. */
  protected int threads() {
    return 8;
  }

  /** Operations per thread; network stores may lower it to keep the suite quick. */
  protected int operationsPerThread() {
    StoreConfiguration c = configuration();
    return c == null ? 2_000 : c.operationsPerThread();
  }

  @Test
  public void concurrentIncrementsAreExact() {
    int n = operationsPerThread();
    Concurrently.run(threads(), n, (t, i) -> {
      counters.incr("hot");
      counters.incr("key-" + (i % 10), 2);
      counters.decr("down", 1, 1_000_000);
    });
    long total = (long) threads() * n;
    assertThat(counters.get("hot")).hasValue(total);
    long sum = 0;
    for (int k = 0; k < 10; k++) {
      sum += counters.get("key-" + k).orElseThrow();
    }
    assertThat(sum).isEqualTo(2 * total);
    assertThat(counters.get("down")).hasValue(1_000_000 - total);
  }

  @Test
  public void incrementsReturnDistinctValues() {
    ConcurrentLinkedQueue<Long> seen = new ConcurrentLinkedQueue<>();
    Concurrently.run(threads(), operationsPerThread() / 4, (t, i) -> seen.add(counters.incr("seq")));
    assertThat(seen).doesNotHaveDuplicates().hasSize(threads() * (operationsPerThread() / 4));
  }

  @Test
  public void concurrentFloatingIncrementsAreExact() {
    // 0.5 is exact in binary, so the total is exact too.
    Concurrently.run(threads(), operationsPerThread() / 4, (t, i) -> counters.incr("f", 0.5));
    assertThat(counters.getDouble("f")).hasValue(threads() * (operationsPerThread() / 4) * 0.5);
  }

  @Test
  public void exactlyOneConcurrentAddWins() {
    int rounds = 50;
    for (int round = 0; round < rounds; round++) {
      String key = "add-" + round;
      AtomicInteger winners = new AtomicInteger();
      AtomicInteger winningValue = new AtomicInteger(-1);
      Concurrently.run(threads(), 1, (t, i) -> {
        if (counters.add(key, t, Duration.ofMinutes(1))) {
          winners.incrementAndGet();
          winningValue.set(t);
        }
      });
      assertThat(winners).as("winners of round %d", round).hasValue(1);
      assertThat(counters.get(key)).hasValue(winningValue.get());
    }
  }

  @Test
  public void popRacingWithIncrNeverLosesACount() {
    int writers = Math.max(1, threads() - 1);
    int n = operationsPerThread();
    AtomicLong flushed = new AtomicLong();
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger finishedWriters = new AtomicInteger();
    Concurrently.run(writers + 1, 1, (t, ignored) -> {
      if (t == 0) {
        while (!done.get()) {
          flushed.addAndGet(counters.pop("views").orElse(0));
        }
      } else {
        for (int i = 0; i < n; i++) {
          counters.incr("views");
        }
        if (finishedWriters.incrementAndGet() == writers) {
          done.set(true);
        }
      }
    });
    long remaining = counters.pop("views").orElse(0);
    assertThat(flushed.get() + remaining).isEqualTo((long) writers * n);
  }

  @Test
  public void incrWithDefaultRacingWithDeleteNeverMixesTheTwo() {
    // Every result is either default + k (a fresh counter) or an increment of a live one: never
    // an increment applied to a deleted counter, which would show up as a value below default.
    long dflt = 1_000_000;
    AtomicBoolean sawBelowDefault = new AtomicBoolean();
    Concurrently.run(threads(), operationsPerThread() / 2, (t, i) -> {
      if (t == 0 && i % 3 == 0) {
        counters.delete("k");
      } else if (counters.incr("k", 1, dflt) <= dflt) {
        sawBelowDefault.set(true);
      }
    });
    assertThat(sawBelowDefault).isFalse();
  }

  @Test
  public void transactionsAreNeverSeenHalfApplied() {
    // Writers move units from one counter to another in transactions; readers read both in a
    // transaction. The sum is invariant at every moment a reader can observe.
    counters.put("from", 1_000_000);
    counters.put("to", 0);
    List<String> violations = new ArrayList<>();
    int n = operationsPerThread() / 4;
    Concurrently.run(threads(), n, (t, i) -> {
      if (t % 2 == 0) {
        counters.transaction(tx -> tx.decr("from", 1).incr("to"));
      } else {
        TransactionResult r = counters.transaction(tx -> tx.get("from").get("to"));
        long sum = r.getLong(0) + r.getLong(1);
        if (sum != 1_000_000) {
          synchronized (violations) {
            violations.add("from + to = " + sum);
          }
        }
      }
    });
    assertThat(violations).isEmpty();
    int transfers = ((threads() + 1) / 2) * n;
    assertThat(counters.get("to")).hasValue(transfers);
    assertThat(counters.get("from")).hasValue(1_000_000 - transfers);
  }

  @Test
  public void transactionsOnOverlappingKeysDoNotDeadlock() {
    Concurrently.run(threads(), operationsPerThread() / 4, (t, i) -> {
      if (t % 2 == 0) {
        counters.transaction(tx -> tx.incr("a").incr("b"));
      } else {
        counters.transaction(tx -> tx.incr("b").incr("a"));
      }
    });
    long total = (long) threads() * (operationsPerThread() / 4);
    assertThat(counters.get("a")).hasValue(total);
    assertThat(counters.get("b")).hasValue(total);
  }
}
