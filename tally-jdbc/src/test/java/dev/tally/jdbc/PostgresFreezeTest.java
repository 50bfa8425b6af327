package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.ConcurrencyLimit;
import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreTimeoutException;
import dev.tally.Tally;
import dev.tally.tck.FaultWorkload;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A long freeze: PostgreSQL frozen ({@code SIGSTOP}) for 10 s under a store with
 * {@code timeout=2s}, while threads increment and decide (the limiter calls batched, the
 * default). Before, every call whose statement was out waited out the whole freeze; now each
 * ends within its timeout and a second, the calls succeed again once the server resumes, and the
 * books balance. The kit's server-fault case runs a shorter freeze on every configuration; this
 * one is long enough that a call bounded only by the end of the freeze would show.
 */
class PostgresFreezeTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(2);
  private static final Duration FREEZE = Duration.ofSeconds(10);
  private static final Duration BOUND = TIMEOUT.plusSeconds(1);
  private static final int CAPACITY = 100_000;

  @Test
  void aTenSecondFreezeEndsEveryCallWithinItsTimeoutAndASecond() throws Exception {
    PostgresServer server = PostgresServer.shared();
    String prefix = "freeze:" + Long.toHexString(System.nanoTime()) + ":";
    try (Tally tally = Tally.open(server.uri("timeout=" + TIMEOUT.toSeconds() + "s"))) {
      Counters counters = tally.counters();
      // refilled over a year (a thousandth of a permit during the test): every permit taken shows
      RateLimiter limiter = tally.limiter(prefix + "limiter", Limit.tokenBucket(CAPACITY, Duration.ofDays(365)));
      counters.incr(prefix + "counter", 0);
      FaultWorkload load = FaultWorkload.start(counters, prefix + "counter", 4, limiter, 4);
      long resumedAt;
      long recoveredAt;
      List<String> hanging;
      try {
        Thread.sleep(500);
        server.freeze();
        try {
          Thread.sleep(FREEZE.toMillis());
        } finally {
          server.resume();
          resumedAt = System.nanoTime();
        }
        long until = resumedAt + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < until && !load.allSucceededSince(resumedAt)) {
          Thread.sleep(20);
        }
        recoveredAt = load.everyThreadSucceededAt(resumedAt);
      } finally {
        hanging = load.stop(BOUND.toMillis() + 1_000);
      }
      System.out.println("PostgresFreezeTest: " + FREEZE.toSeconds() + " s freeze, timeout " + TIMEOUT.toSeconds()
          + " s: " + load + "; every thread succeeded again "
          + TimeUnit.NANOSECONDS.toMillis(recoveredAt - resumedAt) + " ms after the resume");
      assertThat(hanging).as("threads whose call hangs").isEmpty();
      load.assertEveryCallEndedWithin(BOUND);
      assertThat(load.allSucceededSince(resumedAt)).as("every thread succeeds again (%s)", load).isTrue();
      assertThat(load.incrementsUnknown() + load.decisionsUnknown()).as("calls failed by the freeze").isPositive();
      load.assertNothingAcknowledgedLost(counters.get(prefix + "counter").orElseThrow(),
          CAPACITY - limiter.available(), CAPACITY);
    }
  }

  /**
   * A call of several statements in one database transaction (a concurrency limit's step, a
   * counters transaction) that the freeze times out fails as a timeout, "may or may not have been
   * applied", as a single statement does: ending the transaction on the connection pgjdbc closed
   * must not replace that failure with its own ("Connection is closed"), which tells the caller
   * nothing of what happened. Each call runs right after a success, on the connection that call
   * used, so that it reaches the frozen server rather than the pool's check of an idle one.
   */
  @Test
  void aTransactionTheFreezeTimesOutFailsAsATimeout() throws Exception {
    PostgresServer server = PostgresServer.shared();
    String prefix = "frozen-tx:" + Long.toHexString(System.nanoTime()) + ":";
    try (Tally tally = Tally.open(server.uri("timeout=1s"))) {
      ConcurrencyLimit limit = tally.concurrency(prefix + "limit", 10);
      Counters counters = tally.counters();
      assertThat(limit.inUse()).isZero();
      server.freeze();
      try {
        assertThatThrownBy(() -> limit.tryAcquire(Duration.ofMinutes(1)))
            .isInstanceOf(StoreTimeoutException.class).hasMessageContaining("may or may not");
      } finally {
        server.resume();
      }
      counters.incr(prefix + "n", 0);
      server.freeze();
      try {
        assertThatThrownBy(() -> counters.transaction(tx -> tx.incr(prefix + "n").incr(prefix + "m")))
            .isInstanceOf(StoreTimeoutException.class).hasMessageContaining("may or may not");
      } finally {
        server.resume();
      }
    }
  }
}
