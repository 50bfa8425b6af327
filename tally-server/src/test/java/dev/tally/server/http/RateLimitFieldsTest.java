package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.server.app.LimitSpec;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RateLimitFieldsTest {
  static final Instant NOW = Instant.parse("2026-02-10T12:00:00Z");
  static final long S = 1_000_000_000L;

  private static Map<String, String> fields(List<LimitSpec> limits, Decision d) {
    Reply r = Reply.of(null);
    RateLimitFields.apply(r, limits, d, NOW);
    return r.headers();
  }

  private static LimitSpec spec(LimitSpec.Kind kind, String text, String policy) {
    return LimitSpec.parse(kind, text, policy);
  }

  @Test
  void anAllowedRequestCarriesPolicyAndStateButNoRetryAfter() {
    var limits = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "100/1m", "default"));
    assertThat(fields(limits, new Decision(true, 99, 100, 0, 600_000_000L))).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60"),
        Map.entry("RateLimit", "\"default\";r=99;t=1"));
  }

  @Test
  void aDeniedRequestAddsRetryAfterRoundedUp() {
    var limits = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "100/1m", "default"));
    assertThat(fields(limits, new Decision(false, 0, 100, 2 * S + 1, 60 * S))).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60"),
        Map.entry("RateLimit", "\"default\";r=0;t=60"),
        Map.entry("Retry-After", "3"));
    assertThat(fields(limits, new Decision(false, 0, 100, 1, 1)).get("Retry-After")).isEqualTo("1");
  }

  @Test
  void aRequestThatCanNeverFitHasNoRetryAfter() {
    var limits = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "10/1s", "default"));
    assertThat(fields(limits, new Decision(false, 10, 10, Decision.NEVER, 0))).doesNotContainKey("Retry-After");
  }

  @Test
  void severalLimitsAreListedEachWithItsOwnRemainingAndReset() {
    var limits = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "100/1m", "default"),
        spec(LimitSpec.Kind.FIXED_WINDOW, "1000/1h", "hourly"));
    Decision d = new Decision(false, 0, 1000, 5 * S, 2_845 * S, 1,
        new long[] {40, 100, 36 * S - 1, 0, 1000, 2_845 * S});
    Map<String, String> f = fields(limits, d);
    assertThat(f.get("RateLimit-Policy")).isEqualTo("\"default\";q=100;w=60, \"hourly\";q=1000;w=3600");
    assertThat(f.get("RateLimit")).as("the bucket's reset is its own, not the hour's")
        .isEqualTo("\"default\";r=40;t=36, \"hourly\";r=0;t=2845");
    assertThat(f.get("Retry-After")).isEqualTo("5");
  }

  @Test
  void withoutEachLimitsStateTheDecidingPolicyIsReportedWithinItsWindow() {
    var limits = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "100/1m", "default"),
        spec(LimitSpec.Kind.FIXED_WINDOW, "1000/1h", "hourly"));
    assertThat(fields(limits, new Decision(false, 0, 100, 5 * S, 2_845 * S, 0)).get("RateLimit"))
        .isEqualTo("\"default\";r=0;t=60");
    assertThat(fields(limits, new Decision(false, 0, 1000, 5 * S, 5 * S, 1)).get("RateLimit"))
        .isEqualTo("\"hourly\";r=0;t=5");
  }

  @Test
  void ofTwoLimitsOfOneSizeTheOneThatDecidedIsNamedAsViolated() {
    var limits = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "3/1s", "default"),
        spec(LimitSpec.Kind.FIXED_WINDOW, "3/1h", "hourly"));
    Reply r = Reply.of(null);
    RateLimitFields.apply(r, limits, new Decision(false, 0, 3, 5 * S, 5 * S, 1,
        new long[] {3, 3, 0, 0, 3, 5 * S}), NOW);
    assertThat(r.headers().get("RateLimit")).isEqualTo("\"default\";r=3;t=0, \"hourly\";r=0;t=5");
    assertThat(r.decidingPolicy()).isEqualTo("hourly");
  }

  @Test
  void windowsAreTheTimeToRefillCompletely() {
    assertThat(spec(LimitSpec.Kind.TOKEN_BUCKET, "10:1/1s", "p").windowSeconds(NOW)).isEqualTo(10);
    assertThat(spec(LimitSpec.Kind.LEAKY_BUCKET, "100/1m", "p").windowSeconds(NOW)).isEqualTo(60);
    assertThat(spec(LimitSpec.Kind.GCRA, "15:30/60s", "p").windowSeconds(NOW)).isEqualTo(32);
    assertThat(spec(LimitSpec.Kind.SLIDING_WINDOW, "5/500ms", "p").windowSeconds(NOW)).isEqualTo(1);
    assertThat(spec(LimitSpec.Kind.QUOTA, "1000/month", "p").windowSeconds(NOW)).isEqualTo(28 * 86_400);
    assertThat(spec(LimitSpec.Kind.QUOTA, "1000/day@Europe/Paris", "p")
        .windowSeconds(Instant.parse("2026-03-29T12:00:00Z"))).as("the day clocks go forward").isEqualTo(23 * 3600);
  }

  @Test
  void limitTextsAreCheckedWithMessagesThatShowTheForm() {
    assertThatThrownBy(() -> spec(LimitSpec.Kind.GCRA, "30/60s", "p")).hasMessageContaining("15:30/60s");
    assertThatThrownBy(() -> spec(LimitSpec.Kind.FIXED_WINDOW, "1:2/1h", "p")).hasMessageContaining("100/1h");
    assertThatThrownBy(() -> spec(LimitSpec.Kind.QUOTA, "1000/year", "p")).hasMessageContaining("1000/month");
    assertThatThrownBy(() -> spec(LimitSpec.Kind.QUOTA, "10/day@Mars/Olympus", "p")).hasMessageContaining("time zone");
    assertThatThrownBy(() -> spec(LimitSpec.Kind.TOKEN_BUCKET, "0/1s", "p")).hasMessageContaining("positive");
    assertThatThrownBy(() -> spec(LimitSpec.Kind.TOKEN_BUCKET, "1/1s", "bad name")).hasMessageContaining("policy name");
  }
}
