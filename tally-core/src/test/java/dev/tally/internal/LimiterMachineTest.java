package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Examples of the limiter state machine at its edges, each once got wrong. */
class LimiterMachineTest {
  private static final long SECOND = MachineRun.SECOND;

  private static long at(String instant) {
    return MachineRun.at(instant);
  }

  @Test
  void aLimitOfLongMaxValueReportsWhatIsLeft() {
    MachineRun run = new MachineRun(Limit.fixedWindow(Long.MAX_VALUE, Duration.ofMinutes(1)));
    long now = at("2026-11-08T00:00:00Z");

    Decision d = run.call(now, LimiterOperation.ACQUIRE, 1);

    assertThat(d.allowed()).isTrue();
    assertThat(d.limit()).isEqualTo(Long.MAX_VALUE);
    assertThat(d.remaining()).isEqualTo(Long.MAX_VALUE - 1);
    assertThat(run.call(now, LimiterOperation.RESET, 0).remaining()).isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void aQuotaToppedUpToSaturationReportsWhatIsLeft() {
    MachineRun run = new MachineRun(Limit.quota(10, Limit.Period.DAY, ZoneOffset.UTC));
    long now = at("2026-11-08T12:00:00Z");

    run.call(now, LimiterOperation.TOP_UP, Long.MAX_VALUE);
    Decision d = run.call(now, LimiterOperation.ACQUIRE, 5);

    assertThat(d.limit()).isEqualTo(Long.MAX_VALUE);
    assertThat(d.remaining()).isEqualTo(Long.MAX_VALUE - 5);
  }

  @Test
  void theSlidingWindowWeighsPreviousCountsOfTwoToTheSixtyTwoAndMore() {
    MachineRun run = new MachineRun(Limit.slidingWindow(Long.MAX_VALUE, Duration.ofSeconds(1)));
    long start = at("2026-11-08T00:00:00Z");
    long big = (1L << 62) + 5;

    run.call(start, LimiterOperation.ACQUIRE, big);
    Decision next = run.probe(start + SECOND, LimiterOperation.PEEK, 1); // all of it still weighs
    Decision half = run.probe(start + SECOND + SECOND / 2, LimiterOperation.PEEK, 1);

    assertThat(next.remaining()).isEqualTo(Long.MAX_VALUE - big);
    assertThat(half.remaining()).isEqualTo(Long.MAX_VALUE - (big + 1) / 2);
    assertThat(Arith.floorMulDiv(1L << 62, 3, 3)).isEqualTo(1L << 62);
    assertThat(Arith.ceilMulDiv(Long.MAX_VALUE, 2, 2)).isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void aDailyQuotaHoldsWhereClocksWentBackAcrossMidnight() {
    // St. John's, 2009-11-01 00:01 NDT: clocks went back to 2009-10-31 23:01 NST, so 23:01 to
    // 00:00 of October 31 came round again after November 1 had begun (02:31Z to 03:30Z).
    ZoneId stJohns = ZoneId.of("America/St_Johns");
    MachineRun run = new MachineRun(Limit.quota(2, Limit.Period.DAY, stJohns));
    long now = at("2009-11-01T02:45:00Z");

    assertThat(run.call(now, LimiterOperation.ACQUIRE, 1).allowed()).isTrue();
    assertThat(run.call(now + 1, LimiterOperation.ACQUIRE, 1).allowed()).isTrue();
    Decision third = run.call(now + 2, LimiterOperation.ACQUIRE, 1);

    assertThat(third.allowed()).isFalse();
    long nextDay = at("2009-11-02T03:30:00Z"); // November 2, 00:00 NST
    assertThat(now + 2 + third.retryAfterNanos()).isEqualTo(nextDay);
    assertThat(run.probe(nextDay - 1, LimiterOperation.ACQUIRE, 1).allowed()).isFalse();
    assertThat(run.probe(nextDay, LimiterOperation.ACQUIRE, 1).allowed()).isTrue();
  }

  @Test
  void aWaitThatOutlastsTheTopUpsOfAQuotaIsNever() {
    Limit quota = Limit.quota(1, Limit.Period.DAY, ZoneOffset.UTC);
    Limit weekly = Limit.fixedWindow(3, Duration.ofDays(7)); // weeks start on Thursdays, 00:00Z
    MachineRun run = new MachineRun(quota, weekly);
    long now = at("2026-01-01T12:00:00Z");
    run.call(now, LimiterOperation.TOP_UP, 5);
    assertThat(run.call(now, LimiterOperation.ACQUIRE, 3).allowed()).isTrue();

    // 2 more fit today's topped-up quota but not this week; next week the quota allows 1.
    Decision d = run.call(now, LimiterOperation.ACQUIRE, 2);

    assertThat(d.allowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(Decision.NEVER);
  }

  @Test
  void aWaitThatEndsBeforeTheTopUpsDoIsExact() {
    Limit quota = Limit.quota(1, Limit.Period.DAY, ZoneOffset.UTC);
    Limit perMinute = Limit.fixedWindow(3, Duration.ofMinutes(1));
    MachineRun run = new MachineRun(quota, perMinute);
    long now = at("2026-01-01T12:00:30Z");
    run.call(now, LimiterOperation.TOP_UP, 5);
    assertThat(run.call(now, LimiterOperation.ACQUIRE, 3).allowed()).isTrue();

    Decision d = run.call(now, LimiterOperation.ACQUIRE, 2);

    assertThat(d.retryAfterNanos()).isEqualTo(30 * SECOND);
    assertThat(run.probe(now + d.retryAfterNanos(), LimiterOperation.ACQUIRE, 2).allowed()).isTrue();
  }
}
