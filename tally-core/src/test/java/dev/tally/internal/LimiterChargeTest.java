package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A charge on each algorithm: granted whatever is left, never more than one full limit below
 * empty, and repaid before a later request fits, to the nanosecond ({@code docs/limiters.md#debt}).
 */
class LimiterChargeTest {
  private static final long SECOND = MachineRun.SECOND;
  private static final long MINUTE = 60 * SECOND;

  private static long at(String instant) {
    return MachineRun.at(instant);
  }

  /** Calls on one machine, with the checks a charge and an exact retry make. */
  private static final class Run extends MachineRun {
    Run(Limit... limits) {
      super(limits);
    }

    Decision charge(long now, long permits) {
      Decision d = call(now, LimiterOperation.CHARGE, permits);
      assertThat(d.allowed()).as("a charge is always granted").isTrue();
      assertThat(d.retryAfterNanos()).isZero();
      return d;
    }

    Decision probe(long now, long permits) {
      return probe(now, LimiterOperation.ACQUIRE, permits);
    }

    /** {@code permits} are refused a nanosecond before {@code retryAfter}, granted at it; returns it. */
    long exactRetry(long now, long permits) {
      long wait = probe(now, permits).retryAfterNanos();
      assertThat(wait).isPositive().isNotEqualTo(Decision.NEVER);
      assertThat(probe(now + wait - 1, permits).allowed()).as("a nanosecond early").isFalse();
      assertThat(probe(now + wait, permits).allowed()).as("at the retry").isTrue();
      return wait;
    }
  }

  @Test
  void aBucketGoesAtMostOneCapacityBelowEmptyAndRefillsThroughTheDebt() {
    Run run = new Run(Limit.tokenBucket(10, Duration.ofSeconds(1))); // T = 100 ms
    long now = at("2026-12-01T00:00:00Z");

    Decision d = run.charge(now, 25);

    assertThat(d.remaining()).isZero();
    assertThat(d.resetAfterNanos()).as("10 tokens of the bucket and 10 of debt: 2 s to refill").isEqualTo(2 * SECOND);
    assertThat(run.charge(now, 5).resetAfterNanos()).as("the bound: nothing more").isEqualTo(2 * SECOND);
    // One token is there once the debt (1 s) and the token (100 ms) have refilled.
    assertThat(run.exactRetry(now, 1)).isEqualTo(1_100_000_000L);
    assertThat(run.exactRetry(now, 10)).isEqualTo(2 * SECOND);
    // Half repaid, half of the debt's room is back.
    assertThat(run.charge(now + 500_000_000L, 100).resetAfterNanos()).isEqualTo(2 * SECOND);
  }

  @Test
  void aRefundGivesBackADebtToo() {
    Run run = new Run(Limit.tokenBucket(10, Duration.ofSeconds(1)));
    long now = at("2026-12-01T00:00:00Z");
    run.charge(now, 20);

    Decision d = run.call(now, LimiterOperation.REFUND, 15);

    assertThat(d.remaining()).isEqualTo(5);
    assertThat(d.resetAfterNanos()).isEqualTo(500_000_000L);
  }

  /**
   * Cold, a unit costs 3T, and the debt is bounded in time: {@code fullAt} at most
   * {@code (C - 1)T + I + CT = 0.9 + 0.3 + 1 s} ahead, so 7 units of 300 ms (2.1 s), not 20.
   */
  @Test
  void aColdWarmingBucketIsChargedAtItsColdCostWithinTheSameTimeBound() {
    Run run = new Run(Limit.tokenBucket(10, Duration.ofSeconds(1)).warmUp(Duration.ofSeconds(10), 3));
    long now = at("2026-12-01T00:00:00Z");

    assertThat(run.charge(now, 0).resetAfterNanos()).as("a charge of nothing takes nothing").isZero();
    Decision d = run.charge(now, 100);

    assertThat(d.remaining()).isZero();
    assertThat(d.resetAfterNanos()).isEqualTo(7 * 300_000_000L);
    assertThat(run.charge(now, 1).resetAfterNanos()).as("100 ms of room left: less than a unit").isEqualTo(2_100_000_000L);
    run.exactRetry(now, 1);
    run.exactRetry(now, 10);
  }

  @Test
  void aWarmBucketWithAWarmUpHasThePlainBucketsBound() {
    Run run = new Run(Limit.tokenBucket(10, Duration.ofSeconds(1)).warmUp(Duration.ofSeconds(10), 3));
    long now = at("2026-12-01T00:00:00Z");
    run.call(now, LimiterOperation.ACQUIRE, 1);
    now += 9 * SECOND; // full again, still warm, and 9 s into the warm-up
    run.call(now, LimiterOperation.ACQUIRE, 1);
    now += 10 * SECOND; // warm: a unit costs T

    assertThat(run.charge(now, 100).resetAfterNanos()).isEqualTo(2 * SECOND);
    assertThat(run.exactRetry(now, 1)).isEqualTo(1_100_000_000L);
  }

  @Test
  void aFixedWindowCountsTwiceItsLimitAtMostAndForgivesTheDebtAtItsEnd() {
    Run run = new Run(Limit.fixedWindow(10, Duration.ofMinutes(1)));
    long start = at("2026-12-01T00:00:00Z");
    long now = start + 20 * SECOND;

    assertThat(run.charge(now, 25).remaining()).isZero();
    assertThat(run.record[Algorithm.S1]).isEqualTo(20);
    run.charge(now, 5);
    assertThat(run.record[Algorithm.S1]).as("the bound").isEqualTo(20);
    assertThat(run.call(now, LimiterOperation.REFUND, 5).remaining()).as("still in debt").isZero();

    assertThat(run.exactRetry(now, 1)).isEqualTo(40 * SECOND);
    assertThat(run.call(start + MINUTE, LimiterOperation.ACQUIRE, 10).allowed()).as("forgiven at the boundary").isTrue();
  }

  /**
   * A window charged to twice its limit weighs on the next one: a unit fits once the previous
   * share is at most 9 ({@code 20·(W-e)/W <= 9}, 33 s in), the whole limit only a window later.
   */
  @Test
  void aSlidingWindowsDebtWeighsThroughTheNextWindow() {
    Run run = new Run(Limit.slidingWindow(10, Duration.ofMinutes(1)));
    long start = at("2026-12-01T00:00:00Z");
    long now = start + 30 * SECOND;

    run.charge(now, 100);
    assertThat(run.record[Algorithm.S1]).isEqualTo(20);

    assertThat(run.exactRetry(now, 1)).isEqualTo(30 * SECOND + 33 * SECOND);
    assertThat(run.exactRetry(now, 10)).as("more than one window").isEqualTo(30 * SECOND + MINUTE);
    assertThat(run.call(start + MINUTE + 1, LimiterOperation.CHARGE, 100).remaining()).isZero();
    assertThat(run.record[Algorithm.S1]).as("the estimate is at the bound already").isZero();
  }

  @Test
  void aSlidingWindowsChargeCountsThePreviousShareTowardsTheBound() {
    Run run = new Run(Limit.slidingWindow(10, Duration.ofMinutes(1)));
    long start = at("2026-12-01T00:00:00Z");
    run.call(start, LimiterOperation.ACQUIRE, 10);
    long now = start + MINUTE + 30 * SECOND; // the previous 10 weigh 5

    run.charge(now, 100);

    assertThat(run.record[Algorithm.S1]).isEqualTo(15);
  }

  @Test
  void aQuotaUsesTwiceItsLimitInForceAtMostAndStartsAfreshNextPeriod() {
    Run run = new Run(Limit.quota(10, Limit.Period.DAY, ZoneOffset.UTC));
    long now = at("2026-12-01T12:00:00Z");

    run.charge(now, 25);
    assertThat(run.record[Algorithm.S1]).isEqualTo(20);
    run.call(now, LimiterOperation.TOP_UP, 5);
    assertThat(run.charge(now, 100).remaining()).isZero();
    assertThat(run.record[Algorithm.S1]).as("twice 10 + 5").isEqualTo(30);

    assertThat(run.exactRetry(now, 1)).isEqualTo(12 * 3600 * SECOND);
    assertThat(run.call(at("2026-12-02T00:00:00Z"), LimiterOperation.ACQUIRE, 10).allowed()).isTrue();
  }

  @Test
  void eachLimitIsChargedToItsOwnBound() {
    Run run = new Run(Limit.tokenBucket(10, Duration.ofSeconds(1)), Limit.fixedWindow(100, Duration.ofMinutes(1)));
    long now = at("2026-12-01T00:00:00Z");

    Decision d = run.charge(now, 25);

    assertThat(d.limits().get(0).resetAfterNanos()).isEqualTo(2 * SECOND);
    assertThat(run.record[Algorithm.WIDTH + Algorithm.S1]).isEqualTo(25);
  }

  @Test
  void aStateInDebtIsKeptUntilRepaid() {
    Run run = new Run(Limit.fixedWindow(10, Duration.ofMinutes(1)));
    long now = at("2026-12-01T00:00:30Z");

    LimiterOutcome out = run.machine.apply(null, now, LimiterOperation.CHARGE, 15);

    assertThat(out.keepNanos()).isEqualTo(30 * SECOND);
  }
}
