package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class FailurePolicyTest {
  private final List<String> events = new ArrayList<>();
  private final Tally tally = Tally.builder("unreachable:")
      .listener(new TallyListener() {
        @Override
        public void onFailurePolicyApplied(String op, String key, FailurePolicy policy, StoreException cause) {
          events.add(policy + " " + op + " " + key);
        }
      })
      .build();

  @Test
  void storeFailuresThrowByDefault() {
    assertThatThrownBy(() -> tally.counters().incr("k")).isInstanceOf(StoreUnavailableException.class);
    assertThatThrownBy(() -> tally.limiter("l", Limit.tokenBucket(1, Duration.ofSeconds(1))).tryAcquire())
        .isInstanceOf(StoreUnavailableException.class);
    assertThat(events).isEmpty();
  }

  @Test
  void failOpenCountersAnswerAsTheNullStoreAndReportIt() {
    Counters views = tally.counters("views", FailurePolicy.FAIL_OPEN);
    assertThat(views.incr("episode:512", 1, 10)).isEqualTo(11);
    assertThat(views.get("episode:512")).isEmpty();
    assertThat(views.pop("episode:512")).isEmpty();
    assertThat(views.keys("")).isEmpty();
    assertThat(views.transaction(tx -> tx.incr("a").incr("b", 2)).getLong(1)).isEqualTo(2);
    assertThat(events).first().isEqualTo("FAIL_OPEN incr views:episode:512");
    assertThat(events).hasSize(5);
  }

  @Test
  void aViewCounterCanFailOpenWhileAQuotaThrows() {
    Counters views = tally.counters("views", FailurePolicy.FAIL_OPEN);
    Counters quota = tally.counters("quota", FailurePolicy.THROW);
    assertThat(views.incr("x")).isEqualTo(1);
    assertThatThrownBy(() -> quota.decr("42", 1)).isInstanceOf(StoreUnavailableException.class);
  }

  @Test
  void failClosedCountersStillThrowBecauseTheyHaveNoDeny() {
    Counters c = tally.counters("c", FailurePolicy.FAIL_CLOSED);
    assertThatThrownBy(() -> c.incr("k")).isInstanceOf(StoreUnavailableException.class);
  }

  @Test
  void noDefaultFormsThrowEvenWhenFailingOpen() {
    Counters c = tally.counters("c", FailurePolicy.FAIL_OPEN);
    assertThatThrownBy(() -> c.incrExisting("k", 1)).isInstanceOf(StoreUnavailableException.class);
  }

  @Test
  void limitersFailOpenOrClosedAsConfigured() {
    RateLimiter l = tally.limiter("api", Limit.tokenBucket(10, Duration.ofSeconds(1)));
    Decision open = l.withFailurePolicy(FailurePolicy.FAIL_OPEN).decide(1);
    assertThat(open.allowed()).isTrue();
    assertThat(open.limit()).isEqualTo(10);
    Decision closed = l.withFailurePolicy(FailurePolicy.FAIL_CLOSED).decide(1);
    assertThat(closed.allowed()).isFalse();
    assertThat(closed.retryAfter()).isEqualTo(Duration.ofSeconds(1));
    assertThat(events).containsExactly("FAIL_OPEN limiter.acquire api", "FAIL_CLOSED limiter.acquire api");
  }

  @Test
  void aLimiterOfSeveralLimitsFailsWithEachLimitsState() {
    RateLimiter l = tally.limiter("two", Limit.tokenBucket(10, Duration.ofSeconds(1)),
        Limit.fixedWindow(100, Duration.ofHours(1)));
    assertThat(l.withFailurePolicy(FailurePolicy.FAIL_OPEN).decide(1).limits()).containsExactly(
        new Decision.LimitState(0, 10, 10, 0), new Decision.LimitState(1, 100, 100, 0));
    long second = Duration.ofSeconds(1).toNanos();
    assertThat(l.withFailurePolicy(FailurePolicy.FAIL_CLOSED).decide(1).limits()).containsExactly(
        new Decision.LimitState(0, 0, 10, second), new Decision.LimitState(1, 0, 100, second));
  }

  @Test
  void asyncOperationsApplyThePolicyToo() {
    Counters views = tally.counters("views", FailurePolicy.FAIL_OPEN);
    assertThat(views.async().incr("k", 5).toCompletableFuture().join()).isEqualTo(5);
    var thrown = tally.counters().async().incr("k").toCompletableFuture();
    assertThatThrownBy(thrown::join).isInstanceOf(CompletionException.class)
        .hasCauseInstanceOf(StoreUnavailableException.class);
  }

  @Test
  void policiesAreReadAndWrittenAsConfigurationNamesThem() {
    for (FailurePolicy p : FailurePolicy.values()) {
      assertThat(FailurePolicy.parse(p.text())).isEqualTo(p);
    }
    assertThat(FailurePolicy.parse(" Fail_Closed ")).isEqualTo(FailurePolicy.FAIL_CLOSED);
    assertThat(FailurePolicy.FAIL_OPEN.text()).isEqualTo("fail-open");
    assertThatThrownBy(() -> FailurePolicy.parse("open"))
        .hasMessage("'open' is not a failure policy: expected throw, fail-open or fail-closed");
  }
}
