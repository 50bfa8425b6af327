package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.tck.FaultWorkload;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The issue's own case: PostgreSQL frozen ({@code SIGSTOP}) for 10 s under a store with
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
}
