package dev.tally.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The header fields and problem bodies of decisions, as tally-server has sent them. */
class RateLimitFieldsTest {
  private static final long S = 1_000_000_000L;
  private static final RateLimitFields.Policy DEFAULT = new RateLimitFields.Policy("default", 100, 60);
  private static final RateLimitFields.Policy HOURLY = new RateLimitFields.Policy("hourly", 1000, 3600);

  @Test
  void anAllowedDecisionOfOneLimit() {
    RateLimitFields f = RateLimitFields.of(new Decision(true, 40, 100, 0, 35 * S + 1), List.of(DEFAULT));
    assertThat(f.headers()).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60"),
        Map.entry("RateLimit", "\"default\";r=40;t=36"));
    assertThat(f.violatedPolicies()).isEmpty();
    assertThat(f.decidingPolicy()).isEqualTo("default");
  }

  @Test
  void oneLimitSaysTheStoredLimitNotTheConfiguredOne() {
    RateLimitFields f = RateLimitFields.of(new Decision(true, 4, 5, 0, S), List.of(DEFAULT));
    assertThat(f.rateLimitPolicy()).as("the stored limit's size, without the configured limit's window")
        .isEqualTo("\"default\";q=5");
  }

  @Test
  void ofTwoLimitsEachItemDescribesTheStoredLimitAlone() {
    // stored: 100/1m and 50/?; configured: 100/1m and 1000/1h
    Decision d = new Decision(false, 0, 50, 5 * S, 5 * S, 1, new long[] {40, 100, 36 * S, 0, 50, 5 * S});
    assertThat(RateLimitFields.of(d, List.of(DEFAULT, HOURLY)).rateLimitPolicy())
        .isEqualTo("\"default\";q=100;w=60, \"hourly\";q=50");
    Decision deciding = new Decision(false, 0, 50, 5 * S, 5 * S, 1);
    assertThat(RateLimitFields.of(deciding, List.of(DEFAULT, HOURLY)).rateLimitPolicy())
        .as("without each limit's state, the deciding one's stored size")
        .isEqualTo("\"default\";q=100;w=60, \"hourly\";q=50");
  }

  @Test
  void aDeniedDecisionOfTwoLimitsGivesEachItsOwnReset() {
    Decision d = new Decision(false, 0, 1000, 5 * S, 5 * S, 1, new long[] {40, 100, 36 * S, 0, 1000, 5 * S});
    RateLimitFields f = RateLimitFields.of(d, List.of(DEFAULT, HOURLY));
    assertThat(f.headers()).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60, \"hourly\";q=1000;w=3600"),
        Map.entry("RateLimit", "\"default\";r=40;t=36, \"hourly\";r=0;t=5"),
        Map.entry("Retry-After", "5"));
    assertThat(f.violatedPolicies()).containsExactly("hourly");
    assertThat(f.decidingPolicy()).isEqualTo("hourly");
  }

  @Test
  void withoutEachLimitsStateOneItemBoundedByItsWindow() {
    Decision d = new Decision(true, 3, 100, 0, 7200 * S, 0);
    assertThat(RateLimitFields.of(d, List.of(DEFAULT, HOURLY)).rateLimit()).isEqualTo("\"default\";r=3;t=60");
  }

  @Test
  void retryAfterIsAtLeastOneSecondAndAbsentForNever() {
    assertThat(RateLimitFields.of(new Decision(false, 0, 100, 1, 1), List.of(DEFAULT)).retryAfterSeconds()).hasValue(1);
    RateLimitFields never = RateLimitFields.of(new Decision(false, 100, 100, Decision.NEVER, 0), List.of(DEFAULT));
    assertThat(never.retryAfterSeconds()).isEmpty();
    assertThat(never.headers()).doesNotContainKey("Retry-After");
  }

  @Test
  void aFailurePolicysAnswerCarriesNoQuota() {
    RateLimitFields open = RateLimitFields.of(new Decision(true, 100, 100, 0, 0).answeredByFailurePolicy(),
        List.of(DEFAULT));
    assertThat(open.headers()).isEmpty();
    assertThat(open.storeFailed()).isTrue();
    RateLimitFields closed = RateLimitFields.of(new Decision(false, 0, 100, S, S).answeredByFailurePolicy(),
        List.of(DEFAULT));
    assertThat(closed.headers()).containsExactly(Map.entry("Retry-After", "1"));
    assertThat(closed.storeFailed()).isTrue();
  }

  @Test
  void severalLimitersOneRequest() {
    RateLimitFields f = RateLimitFields.ofEach(List.of(DEFAULT, HOURLY),
        List.of(new Decision(true, 99, 100, 0, S), new Decision(false, 0, 1000, 30 * S, 3000 * S)));
    assertThat(f.headers()).containsExactly(
        Map.entry("RateLimit-Policy", "\"default\";q=100;w=60, \"hourly\";q=1000;w=3600"),
        Map.entry("RateLimit", "\"default\";r=99;t=1, \"hourly\";r=0;t=3000"),
        Map.entry("Retry-After", "30"));
    assertThat(f.violatedPolicies()).containsExactly("hourly");
    RateLimitFields half = RateLimitFields.ofEach(List.of(DEFAULT, HOURLY),
        List.of(new Decision(true, 99, 100, 0, S), new Decision(true, 1000, 1000, 0, 0).answeredByFailurePolicy()));
    assertThat(half.rateLimit()).as("only what the store decided").isEqualTo("\"default\";r=99;t=1");
    assertThat(half.storeFailed()).isTrue();
  }

  @Test
  void policyIdsAreCheckedBeforeTheyReachAField() {
    assertThatThrownBy(() -> new RateLimitFields.Policy("a\"b", 1, 1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new RateLimitFields.Policy("a", 1, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> RateLimitFields.of(new Decision(true, 1, 1, 0, 0), List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theServersDeniedBody() {
    // What tally-server's POST /limiters/{name} answers for a denial, member for member.
    Decision d = new Decision(false, 0, 100, 1_500_000, 36 * S);
    RateLimitFields f = RateLimitFields.of(d, List.of(DEFAULT));
    String detail = "the limiter 'api:42' has no room for 1 permits now";
    String json = Problem.quotaExceeded(detail).member("error", "denied").member("message", detail)
        .decision("api:42", 1, d).violatedPolicies(f).toJson();
    assertThat(json).isEqualTo("{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\","
        + "\"title\":\"Request cannot be satisfied as assigned quota has been exceeded\",\"status\":429,"
        + "\"detail\":\"the limiter 'api:42' has no room for 1 permits now\",\"error\":\"denied\","
        + "\"message\":\"the limiter 'api:42' has no room for 1 permits now\",\"name\":\"api:42\","
        + "\"allowed\":false,\"permits\":1,\"remaining\":0,\"limit\":100,\"retryAfterMillis\":2,"
        + "\"resetAfterMillis\":36000,\"violated-policies\":[\"default\"]}");
  }

  @Test
  void aRepeatedMemberKeepsItsPlaceAndNeverIsNull() {
    Decision d = new Decision(false, 100, 100, Decision.NEVER, 0);
    String json = Problem.quotaExceeded("x").member("message", "x").decision("n", 500, d)
        .member("message", "500 permits exceed the limit of 100").toJson();
    assertThat(json).contains("\"detail\":\"x\",\"message\":\"500 permits exceed the limit of 100\",\"name\":\"n\"")
        .contains("\"retryAfterMillis\":null");
  }

  @Test
  void stringsAreEscaped() {
    assertThat(Problem.storeUnavailable("a \"b\"\\\n\u0001").toJson()).isEqualTo("{\"type\":\"about:blank\","
        + "\"title\":\"Service Unavailable\",\"status\":503,\"detail\":\"a \\\"b\\\"\\\\\\n\\u0001\"}");
    assertThat(Problem.storeUnavailable("x").status()).isEqualTo(503);
    assertThatThrownBy(() -> Problem.of(99, "about:blank", "t", "d")).isInstanceOf(IllegalArgumentException.class);
  }
}
