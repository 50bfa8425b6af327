package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.LimitSpec;
import dev.tally.server.app.LimiterDecision;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A limiter's decision as the HTTP API and {@code --json} answer it. */
class ReplyTest {
  static final Instant NOW = Instant.parse("2026-02-10T12:00:00Z");
  static final long S = 1_000_000_000L;

  private static LimitSpec spec(LimitSpec.Kind kind, String text, String policy) {
    return LimitSpec.parse(kind, text, policy);
  }

  private static Reply reply(List<LimitSpec> limits, Decision d) {
    return Reply.of(new LimiterDecision("api:42", 1, limits, d, null, 0));
  }

  private static final List<LimitSpec> ONE = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "100/1m", "default"));
  private static final List<LimitSpec> TWO = List.of(spec(LimitSpec.Kind.TOKEN_BUCKET, "100/1m", "default"),
      spec(LimitSpec.Kind.FIXED_WINDOW, "1000/1h", "hourly"));

  @Test
  void anAllowedRequestCarriesPolicyAndStateButNoRetryAfter() {
    Reply r = reply(ONE, new Decision(true, 99, 100, 0, 600_000_000L));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.headers()).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60"),
        Map.entry("RateLimit", "\"default\";r=99;t=1"));
  }

  @Test
  void aDeniedRequestIsTheQuotaExceededProblemThatDevTallyHttpRenders() {
    Decision d = new Decision(false, 0, 100, 1_500_000, 36 * S);
    Reply r = reply(ONE, d);
    assertThat(r.status()).isEqualTo(429);
    assertThat(r.headers()).containsEntry("Retry-After", "1");
    // member for member what tally-core's RateLimitFieldsTest pins as the server's denied body
    assertThat(r.json()).isEqualTo("{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\","
        + "\"title\":\"Request cannot be satisfied as assigned quota has been exceeded\",\"status\":429,"
        + "\"detail\":\"the limiter 'api:42' has no room for 1 permits now\",\"error\":\"denied\","
        + "\"message\":\"the limiter 'api:42' has no room for 1 permits now\",\"name\":\"api:42\","
        + "\"allowed\":false,\"permits\":1,\"remaining\":0,\"limit\":100,\"retryAfterMillis\":2,"
        + "\"resetAfterMillis\":36000,\"violated-policies\":[\"default\"]}");
    assertThat(new String(r.bytes(true), java.nio.charset.StandardCharsets.UTF_8))
        .as("int64=string: every integer a string but the status")
        .contains("\"status\":429,").contains("\"limit\":\"100\"").contains("\"violated-policies\":[\"default\"]");
  }

  @Test
  void aRequestThatCanNeverFitHasNoRetryAfter() {
    Reply r = reply(ONE, new Decision(false, 100, 100, Decision.NEVER, 0));
    assertThat(r.headers()).doesNotContainKey("Retry-After");
    assertThat(r.json()).contains("\"retryAfterMillis\":null").contains("can never be granted");
  }

  @Test
  void severalLimitsAreListedEachWithItsOwnRemainingAndReset() {
    Decision d = new Decision(false, 0, 1000, 5 * S, 2_845 * S, 1,
        new long[] {40, 100, 36 * S - 1, 0, 1000, 2_845 * S});
    Reply r = reply(TWO, d);
    assertThat(r.headers()).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60, \"hourly\";q=1000;w=3600"),
        Map.entry("RateLimit", "\"default\";r=40;t=36, \"hourly\";r=0;t=2845"),
        Map.entry("Retry-After", "5"));
    assertThat(r.decidingPolicy()).isEqualTo("hourly");
    assertThat(r.json()).endsWith("\"violated-policies\":[\"hourly\"]}");
  }

  @Test
  void aStoredLimitOtherThanTheSentOneIsDescribedAloneInThePolicy() {
    // the second limit is stored as 50 of something another process configured
    Decision d = new Decision(false, 0, 50, 5 * S, 5 * S, 1, new long[] {40, 100, 36 * S, 0, 50, 5 * S});
    Reply r = reply(TWO, d);
    assertThat(r.headers().get("RateLimit-Policy")).isEqualTo("\"default\";q=100;w=60, \"hourly\";q=50");
    assertThat(r.headers()).containsEntry("Tally-Limits", "stored-differ");
    assertThat(r.json()).contains("\"storedLimits\":\"differ:");
    assertThat(reply(ONE, new Decision(true, 4, 5, 0, S)).headers().get("RateLimit-Policy"))
        .isEqualTo("\"default\";q=5");
  }

  @Test
  void aFailOpenAnswerIs200WithoutRateLimitFields() {
    Reply r = reply(ONE, new Decision(true, 100, 100, 0, 0).answeredByFailurePolicy());
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.headers()).isEmpty();
  }

  @Test
  void aFailClosedAnswerIs503StoreUnavailableWithRetryAfterAndNoQuota() {
    Reply r = reply(ONE, new Decision(false, 0, 100, 2 * S, 2 * S).answeredByFailurePolicy());
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.exitCode()).isEqualTo(4);
    assertThat(r.headers()).containsExactly(Map.entry("Retry-After", "2"));
    assertThat(r.json()).startsWith("{\"type\":\"about:blank\",\"title\":\"Service Unavailable\",\"status\":503,")
        .contains("\"error\":\"store_unavailable\"").contains("store is unavailable").contains("\"name\":\"api:42\"")
        .doesNotContain("remaining").doesNotContain("violated-policies");
  }

  @Test
  void aHealthProbeOfAStoreThatTimesOutIs503Unavailable() {
    Reply r = Reply.of(new dev.tally.server.app.Health("redis", 2_000_000,
        new dev.tally.StoreTimeoutException("Redis did not answer within 2s", null)));
    assertThat(r.status()).isEqualTo(503);
    assertThat(r.json()).contains("\"error\":\"store_unavailable\"").contains("\"health\":\"unavailable\"")
        .contains("within 2s");
  }
}
