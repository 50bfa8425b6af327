package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.BoundedResult;
import dev.tally.Bounds;
import dev.tally.CounterBoundException;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.TransactionResult;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Bounded increments (DESIGN §2, {@link Bounds}): the rule of
 * {@link dev.tally.spi.CounterMath#addWithin}, alone, in transactions and under contention.
 */
public abstract class BoundedCounterContract extends TallyFixture {
  private static final Duration TTL = Duration.ofMinutes(5);

  /** Threads of the contention cases. */
  protected int threads() {
    return 8;
  }

  /** Attempts per thread in the contention cases. */
  protected int operationsPerThread() {
    StoreConfiguration c = configuration();
    return c == null ? 2_000 : Math.max(50, c.operationsPerThread() / 4);
  }

  // ------------------------------------------------------------------ refuse

  @Test
  public void decrementWithinTheFloorIsApplied() {
    counters.put("q", 10);
    assertThat(counters.decr("q", 10, 0, Bounds.floor(0))).isEqualTo(new BoundedResult(true, 0));
    assertThat(counters.get("q")).hasValue(0);
  }

  @Test
  public void decrementPastTheFloorIsRefusedAndChangesNothing() {
    counters.put("q", 3, TTL);
    assertThat(counters.decr("q", 5, 0, Bounds.floor(0))).isEqualTo(new BoundedResult(false, 3));
    assertThat(counters.get("q")).hasValue(3);
    assertThat(counters.ttl("q")).isPresent();
  }

  @Test
  public void incrementPastTheCeilingIsRefused() {
    counters.put("q", 8);
    assertThat(counters.incr("q", 3, 0, Bounds.between(0, 10))).isEqualTo(new BoundedResult(false, 8));
    assertThat(counters.incr("q", 2, 0, Bounds.between(0, 10))).isEqualTo(new BoundedResult(true, 10));
    assertThat(counters.get("q")).hasValue(10);
  }

  @Test
  public void refusalOnAMissingCounterReportsTheDefaultAndCreatesNothing() {
    assertThat(counters.decr("q", 5, 3, Bounds.floor(0))).isEqualTo(new BoundedResult(false, 3));
    assertThat(counters.get("q")).isEmpty();
    assertThat(counters.decr("q", 2, 3, Bounds.floor(0))).isEqualTo(new BoundedResult(true, 1));
    assertThat(counters.ttl("q")).isEmpty();
  }

  @Test
  public void aBoundedIncrementKeepsALiveKeysExpiry() {
    counters.put("q", 5, TTL);
    assertThat(counters.decr("q", 1, 0, Bounds.floor(0)).applied()).isTrue();
    assertThat(counters.ttl("q")).hasValueSatisfying(d -> assertThat(d).isPositive().isLessThanOrEqualTo(TTL));
  }

  @Test
  public void aCounterOutsideItsBoundsMovesOnlyIntoThem() {
    counters.put("q", -3);
    assertThat(counters.incr("q", 1, 0, Bounds.floor(0))).isEqualTo(new BoundedResult(false, -3));
    assertThat(counters.incr("q", 5, 0, Bounds.floor(0))).isEqualTo(new BoundedResult(true, 2));
    counters.put("s", -3);
    assertThat(counters.incr("s", -1, 0, Bounds.floor(0).saturate())).isEqualTo(new BoundedResult(true, 0));
  }

  // ------------------------------------------------------------------ saturate

  @Test
  public void saturatingSetsTheCrossedBound() {
    counters.put("q", 3);
    assertThat(counters.decr("q", 5, 0, Bounds.floor(0).saturate())).isEqualTo(new BoundedResult(true, 0));
    assertThat(counters.incr("q", 500, 0, Bounds.between(0, 100).saturate())).isEqualTo(new BoundedResult(true, 100));
    assertThat(counters.incr("q", -1, 0, Bounds.between(0, 100).saturate())).isEqualTo(new BoundedResult(true, 99));
    assertThat(counters.get("q")).hasValue(99);
    assertThat(counters.decr("m", 5, 2, Bounds.floor(0).saturate())).isEqualTo(new BoundedResult(true, 0));
    assertThat(counters.get("m")).hasValue(0);
  }

  // ------------------------------------------------------------------ 64-bit edges

  @Test
  public void aSumBeyondTheSignedRangeIsBeyondTheBoundNotAnOverflow() {
    counters.put("hi", Long.MAX_VALUE - 1);
    assertThat(counters.incr("hi", 5, 0, Bounds.ceiling(Long.MAX_VALUE))).isEqualTo(new BoundedResult(false, Long.MAX_VALUE - 1));
    assertThat(counters.incr("hi", 5, 0, Bounds.ceiling(Long.MAX_VALUE).saturate())).isEqualTo(new BoundedResult(true, Long.MAX_VALUE));
    assertThat(counters.incr("hi", Long.MAX_VALUE, 0, Bounds.floor(0).saturate())).isEqualTo(new BoundedResult(true, Long.MAX_VALUE));
    counters.put("lo", Long.MIN_VALUE + 1);
    assertThat(counters.incr("lo", -5, 0, Bounds.floor(Long.MIN_VALUE))).isEqualTo(new BoundedResult(false, Long.MIN_VALUE + 1));
    assertThat(counters.incr("lo", -5, 0, Bounds.floor(Long.MIN_VALUE).saturate())).isEqualTo(new BoundedResult(true, Long.MIN_VALUE));
    assertThat(counters.get("lo")).hasValue(Long.MIN_VALUE);
    assertThat(counters.incr("lo", Long.MAX_VALUE, -1, Bounds.ceiling(-1))).isEqualTo(new BoundedResult(true, -1));
  }

  // ------------------------------------------------------------------ bad input

  @Test
  public void badInputIsAClearErrorThatChangesNothing() {
    assertThatThrownBy(() -> Bounds.between(5, 4)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("min (5) is greater than max (4)");
    assertThatThrownBy(() -> counters.decr("q", 1, -1, Bounds.floor(0)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lies outside its bounds");
    assertThat(counters.get("q")).isEmpty();
    counters.put("f", 2.5, null);
    assertThatThrownBy(() -> counters.decr("f", 1, 0, Bounds.floor(0))).isInstanceOf(NotAnIntegerException.class);
    assertThat(counters.getDouble("f")).hasValue(2.5);
  }

  // ------------------------------------------------------------------ async

  @Test
  public void asyncAnswersAsSync() {
    counters.put("q", 3);
    assertThat(counters.async().decr("q", 5, 0, Bounds.floor(0)).toCompletableFuture().join())
        .isEqualTo(new BoundedResult(false, 3));
    assertThat(counters.async().decr("q", 3, 0, Bounds.floor(0)).toCompletableFuture().join())
        .isEqualTo(new BoundedResult(true, 0));
  }

  // ------------------------------------------------------------------ transactions

  @Test
  public void aRefusalInATransactionRefusesItAll() {
    counters.put("q", 3);
    assertThatThrownBy(() -> counters.transaction(tx -> tx
        .incr("calls")
        .decr("q", 5, 0, Bounds.floor(0))))
        .isInstanceOfSatisfying(CounterBoundException.class, e -> assertThat(e.value()).isEqualTo(3));
    assertThat(counters.get("calls")).isEmpty();
    assertThat(counters.get("q")).hasValue(3);
  }

  @Test
  public void boundedIncrementsInATransactionSeeEarlierOperations() {
    counters.put("q", 3);
    TransactionResult r = counters.transaction(tx -> tx
        .decr("q", 2, 0, Bounds.floor(0))
        .decr("q", 5, 0, Bounds.floor(0).saturate())
        .incr("q", 4, 0, Bounds.ceiling(10))
        .decr("new", 1, 1, Bounds.floor(0)));
    assertThat(r.getLong(0)).isEqualTo(1);
    assertThat(r.getLong(1)).isEqualTo(0);
    assertThat(r.getLong(2)).isEqualTo(4);
    assertThat(r.getLong(3)).isEqualTo(0);
    assertThat(counters.get("q")).hasValue(4);
    assertThat(counters.get("new")).hasValue(0);
  }

  @Test
  public void aTransactionKeepsTheRulesOfIncrExisting() {
    assertThatThrownBy(() -> counters.transaction(tx -> tx.put("a", 1, null).incrExisting("gone", 1)
        .decr("a", 1, 0, Bounds.floor(0))))
        .isInstanceOf(KeyNotFoundException.class);
    assertThat(counters.get("a")).isEmpty();
  }

  // ------------------------------------------------------------------ contention

  @Test
  public void concurrentDecrementsEndExactlyAtTheFloor() {
    int threads = threads();
    int n = operationsPerThread();
    long attempts = (long) threads * n;
    long start = 3 * (attempts / 2);
    counters.put("quota", start);
    AtomicLong refused = new AtomicLong();
    ConcurrentLinkedQueue<Long> granted = new ConcurrentLinkedQueue<>();
    Concurrently.run(threads, n, (t, i) -> {
      BoundedResult r = counters.decr("quota", 3, 0, Bounds.floor(0));
      if (r.applied()) {
        granted.add(r.value());
      } else {
        assertThat(r.value()).isBetween(0L, 2L);
        refused.incrementAndGet();
      }
    });
    assertThat(counters.get("quota")).hasValue(0);
    assertThat(granted).hasSize((int) (start / 3)).doesNotHaveDuplicates();
    assertThat(refused).hasValue(attempts - start / 3);
  }

  @Test
  public void concurrentSaturatingDecrementsStopAtTheFloor() {
    int threads = threads();
    int n = operationsPerThread() / 2;
    long start = 2L * threads * n / 2 + 1;
    counters.put("gauge", start);
    AtomicLong zeros = new AtomicLong();
    Concurrently.run(threads, n, (t, i) -> {
      BoundedResult r = counters.decr("gauge", 2, 0, Bounds.floor(0).saturate());
      assertThat(r.applied()).isTrue();
      if (r.value() == 0) {
        zeros.incrementAndGet();
      }
    });
    assertThat(counters.get("gauge")).hasValue(0);
    // start = 2k + 1: k decrements leave 1, and every later one, the first included, answers 0.
    assertThat(zeros).hasValue((long) threads * n - (start - 1) / 2);
  }

  @Test
  public void concurrentTransactionsTakeFromBothCountersOrNeither() {
    int threads = threads();
    int n = operationsPerThread() / 2;
    long user = (long) threads * n / 4;
    counters.put("user", user);
    counters.put("tenant", 10L * threads * n);
    AtomicLong refused = new AtomicLong();
    Concurrently.run(threads, n, (t, i) -> {
      try {
        counters.transaction(tx -> tx.decr("tenant", 1, 0, Bounds.floor(0)).decr("user", 1, 0, Bounds.floor(0)));
      } catch (CounterBoundException e) {
        refused.incrementAndGet();
      }
    });
    assertThat(counters.get("user")).hasValue(0);
    assertThat(counters.get("tenant")).hasValue(10L * threads * n - user);
    assertThat(refused).hasValue((long) threads * n - user);
  }
}
