package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Limit;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a warm-up may be, how it is stored, and how the stores that predate it see it. */
class WarmUpLimitTest {
  private static final Limit BUCKET = Limit.tokenBucket(10, Duration.ofSeconds(1));

  @Test
  void windowsAndQuotasHaveNoRateToWarmUp() {
    assertThatThrownBy(() -> Limit.fixedWindow(10, Duration.ofSeconds(1)).warmUp(Duration.ofMinutes(1), 3))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rate to warm up");
    assertThatThrownBy(() -> Limit.slidingWindow(10, Duration.ofSeconds(1)).warmUp(Duration.ofMinutes(1), 3))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rate to warm up");
    assertThatThrownBy(() -> Limit.quota(10, Limit.Period.DAY, ZoneOffset.UTC).warmUp(Duration.ofMinutes(1), 3))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rate to warm up");
  }

  @Test
  void theColdFactorIsFromTwoToFifteenAndTheColdSpanMustFit() {
    assertThatThrownBy(() -> BUCKET.warmUp(Duration.ofMinutes(1), 1)).hasMessageContaining("cold factor");
    assertThatThrownBy(() -> BUCKET.warmUp(Duration.ofMinutes(1), 16)).hasMessageContaining("cold factor");
    assertThatThrownBy(() -> BUCKET.warmUp(Duration.ZERO, 3)).isInstanceOf(IllegalArgumentException.class);
    // 2^61 ns per unit fits a bucket of one; three times slower does not, and must not wrap.
    Limit slow = Limit.gcra(0, 1, Duration.ofNanos(Limit.MAX_SPAN_NANOS));
    assertThatThrownBy(() -> slow.warmUp(Duration.ofSeconds(1), 3)).hasMessageContaining("73 years");
  }

  @Test
  void aWarmUpIsPartOfTheLimit() {
    Limit warm = BUCKET.warmUp(Duration.ofMinutes(1), 3);
    assertThat(warm).isNotEqualTo(BUCKET).isEqualTo(BUCKET.warmUp(Duration.ofMinutes(1), 3));
    assertThat(warm).isNotEqualTo(BUCKET.warmUp(Duration.ofMinutes(1), 4));
    assertThat(warm.toString()).isEqualTo("token bucket 10, +10/1s, warm-up 1m from 1/3");
    assertThat(warm.warmUp(Duration.ofSeconds(5), 2).toString()).isEqualTo("token bucket 10, +10/1s, warm-up 5s from 1/2");
    assertThat(LimiterRecord.limitTag(warm)).isEqualTo(1 + 3 * 16);
  }

  /** The record: the factor in the tag, the period in s1, the start in s2; readers that predate it refuse it. */
  @Test
  void theRecordKeepsTheFactorPeriodAndStart() {
    long now = 1_800_000_000_000_000_000L;
    LimiterMachine m = LimiterMachine.of("k", List.of(BUCKET.warmUp(Duration.ofMinutes(1), 3)), 2);
    LimiterOutcome out = m.apply(null, now, LimiterOperation.ACQUIRE, 1);
    assertThat(out.record()).containsExactly(LimiterRecord.tag(49, 2), 10, 100_000_000, now + 300_000_000,
        60_000_000_000L, now);
    assertThat(out.decision().remaining()).isEqualTo(3); // a cold burst of 1 + 9/3, one taken
    assertThat(out.keepNanos()).isEqualTo(300_000_000 + 60_000_000_000L + 1); // until cold
    assertThat(out.decision().resetAfterNanos()).isEqualTo(300_000_000); // until full
    long[] factorOne = out.record().clone();
    factorOne[0] = LimiterRecord.tag(1 + 16, 2);
    assertThatThrownBy(() -> m.apply(new LimiterRecord(now, factorOne), now, LimiterOperation.PEEK, 1))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("unknown algorithm tag");
  }

  @Test
  void onlyAPlainBucketTakesTheMemoryStoresFastPath() {
    assertThat(LimiterMachine.of("k", List.of(BUCKET)).isSingleBucket()).isTrue();
    assertThat(LimiterMachine.of("k", List.of(BUCKET.warmUp(Duration.ofMinutes(1), 3))).isSingleBucket()).isFalse();
  }
}
