package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.LimitSpec.Kind;
import dev.tally.http.RateLimitFields;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The text form of limits that the command line, the HTTP API and the Spring Boot starter share. */
class LimitSpecTest {
  private static final Instant NOW = Instant.parse("2026-02-10T12:00:00Z");

  private static long windowSeconds(String text, Instant now) {
    return RateLimitFields.windowSeconds(LimitSpec.parse(text, "p"), now);
  }

  @Test
  void everyAlgorithmReadsWithItsWindow() {
    assertThat(LimitSpec.parse("token-bucket 100/1m", "p").limit()).isEqualTo(Limit.tokenBucket(100, Duration.ofMinutes(1)));
    assertThat(windowSeconds("token-bucket 100/1m", NOW)).isEqualTo(60);
    assertThat(LimitSpec.parse("token-bucket 10:1/1s", "p").limit()).isEqualTo(Limit.tokenBucket(10, 1, Duration.ofSeconds(1)));
    assertThat(windowSeconds("token-bucket 10:1/1s", NOW)).as("the time to refill completely").isEqualTo(10);
    assertThat(LimitSpec.parse("leaky-bucket 100/1m", "p").limit()).isEqualTo(Limit.leakyBucket(100, Duration.ofMinutes(1)));
    assertThat(windowSeconds("leaky-bucket 100/1m", NOW)).isEqualTo(60);
    assertThat(LimitSpec.parse("gcra 15:30/60s", "p").limit()).isEqualTo(Limit.gcra(15, 30, Duration.ofSeconds(60)));
    assertThat(windowSeconds("gcra 15:30/60s", NOW)).isEqualTo(32);
    assertThat(LimitSpec.parse("fixed-window 1000/1h", "p").limit()).isEqualTo(Limit.fixedWindow(1000, Duration.ofHours(1)));
    assertThat(windowSeconds("sliding-window 5/500ms", NOW)).as("at least a second").isEqualTo(1);
    assertThat(LimitSpec.parse("quota 1000/month", "p").limit()).isEqualTo(Limit.quota(1000, Limit.Period.MONTH, ZoneOffset.UTC));
    assertThat(windowSeconds("quota 1000/month", NOW)).isEqualTo(28 * 86400);
    assertThat(LimitSpec.parse("quota 50/day@Europe/Paris", "p").limit())
        .isEqualTo(Limit.quota(50, Limit.Period.DAY, ZoneId.of("Europe/Paris")));
    assertThat(windowSeconds("quota 1000/day@Europe/Paris", Instant.parse("2026-03-29T12:00:00Z")))
        .as("the day clocks go forward").isEqualTo(23 * 3600);
  }

  @Test
  void aBucketWarmsUpFromAThirdOrTheFractionGiven() {
    Limit warm = LimitSpec.parse("token-bucket 10/1s warm-up 1m", "p").limit();
    assertThat(warm.warmUpNanos()).isEqualTo(Duration.ofMinutes(1).toNanos());
    assertThat(warm.coldFactor()).isEqualTo(3);
    assertThat(LimitSpec.parse(Kind.GCRA, "9:10/1s warm-up 30s from 1/5", "p").limit().coldFactor()).isEqualTo(5);
    assertThat(LimitSpec.parse(Kind.TOKEN_BUCKET, "10/1s warm-up 1m", "p"))
        .hasToString("token-bucket 10/1s warm-up 1m");
  }

  @ParameterizedTest
  @CsvSource({"100/1m, 100, PT1M", "100/m, 100, PT1M", "100/minute, 100, PT1M", "5/day, 5, PT24H",
      "5/1w, 5, PT168H", "5/1h30m, 5, PT1H30M", "5/PT2S, 5, PT2S"})
  void aPeriodIsADurationOrABareUnit(String text, long count, String period) {
    assertThat(LimitSpec.parse(Kind.FIXED_WINDOW, text, "p").limit())
        .isEqualTo(Limit.fixedWindow(count, Duration.parse(period)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"100", "100/", "100/0s", "x/1m", "100 per minute", "99999999999999999999/1s", "100/1y"})
  void badRatesSayWhatToType(String text) {
    assertThatThrownBy(() -> LimitSpec.parse(Kind.SLIDING_WINDOW, text, "p"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'" + text + "'");
  }

  @Test
  void badTextSaysWhatAGoodOneLooksLike() {
    assertThatThrownBy(() -> LimitSpec.parse("100/1m", "p")).hasMessageContaining("names no algorithm")
        .hasMessageContaining("token-bucket 100/1m");
    assertThatThrownBy(() -> LimitSpec.parse(" ", "p")).hasMessageContaining("names no algorithm");
    assertThatThrownBy(() -> LimitSpec.parse("bucket 100/1m", "p")).hasMessageContaining("unknown algorithm 'bucket'")
        .hasMessageContaining("leaky-bucket 100/1m");
    assertThatThrownBy(() -> LimitSpec.parse("token-bucket 100/1y", "p")).hasMessageContaining("limit 'p'")
        .hasMessageContaining("no valid period").hasMessageContaining("100/1m or 10:1/1s");
    assertThatThrownBy(() -> LimitSpec.parse("token-bucket 0/1m", "p")).hasMessageContaining("capacity must be positive");
    assertThatThrownBy(() -> LimitSpec.parse("fixed-window 2:1/1m", "p")).hasMessageContaining("expected one like 100/1h");
    assertThatThrownBy(() -> LimitSpec.parse("gcra 30/60s", "p")).hasMessageContaining("has no burst")
        .hasMessageContaining("15:30/60s");
    assertThatThrownBy(() -> LimitSpec.parse("token-bucket 99999999999999999999/1m", "p")).hasMessageContaining("too large");
    assertThatThrownBy(() -> LimitSpec.parse("quota 5/day@Mars/Olympus", "p")).hasMessageContaining("unknown time zone");
    assertThatThrownBy(() -> LimitSpec.parse("quota 5/week", "p")).hasMessageContaining("1000/month");
    assertThatThrownBy(() -> LimitSpec.parse("quota 1000/year", "p")).hasMessageContaining("is not a quota");
    assertThatThrownBy(() -> LimitSpec.parse("token-bucket 1/1s", "p q")).hasMessageContaining("limit name 'p q'");
    assertThatThrownBy(() -> LimitSpec.parse(Kind.FIXED_WINDOW, "10/1s warm-up 1m", "p"))
        .hasMessageContaining("fixedWindow '10/1s warm-up 1m'");
    assertThatThrownBy(() -> LimitSpec.parse(Kind.TOKEN_BUCKET, "10/1s warm-up 1m from 1/1", "p"))
        .hasMessageContaining("tokenBucket '10/1s warm-up 1m from 1/1'");
  }
}
