package dev.tally.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.FailurePolicy;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A grant that a failure policy answered took nothing, so what is settled after the response
 * (a refund, a post-execution cost, the units given back after a later refusal) leaves it alone
 * and does not call the store for it.
 */
class SettleAfterFailurePolicyTest {

  /** A Redis no one listens on, opened lazily: every call that reaches the store fails and its failure policy answers. */
  @Test
  void aFailOpenGrantIsNotRefundedAndTheStoreIsNotCalled() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    List<String> answeredByPolicy = new CopyOnWriteArrayList<>();
    TallyListener listener = new TallyListener() {
      @Override
      public void onFailurePolicyApplied(String operation, String key, FailurePolicy policy, StoreException cause) {
        answeredByPolicy.add(operation);
      }
    };
    Rule rule = new Rule("api", List.of(Policy.parse("api", "token-bucket 3/1d")), FailurePolicy.FAIL_OPEN);
    try (Tally tally = Tally.builder("redis://127.0.0.1:" + port + "?timeout=500ms").deferOpen(true)
        .listener(listener).build()) {
      TallyRateLimits limits = new TallyRateLimits(tally, "rl:", Map.of("api", rule), List.of());
      TallyRateLimits.Target target = new TallyRateLimits.Target(rule, "ann", 1);
      RateLimitVerdict verdict = limits.check(List.of(target));
      assertThat(verdict.allowed()).isTrue();
      assertThat(verdict.outcomes().get(0).decision().storeFailed()).isTrue();
      assertThat(answeredByPolicy).hasSize(1);

      limits.settle(target, 0, verdict.outcomes());
      limits.settle(target, 3, verdict.outcomes());
      assertThat(answeredByPolicy).as("neither the refund nor the extra cost called the store").hasSize(1);

      // That the store would have been called (and the call seen) had the grant been the store's:
      limits.limiter("api", "ann").refund(1);
      assertThat(answeredByPolicy).hasSize(2);
    }
  }

  /**
   * One request, two policies: the store decided the first, the failure policy the second (the
   * store failed in between). A refund after the response gives the first its unit back and asks
   * nothing of the second, whose key keeps what it had: a refund there would give it a unit it
   * never spent.
   */
  @Test
  void onlyThePoliciesTheStoreDecidedAreRefunded() {
    AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
    Rule rule = new Rule("api", List.of(Policy.parse("minute", "token-bucket 3/1d"),
        Policy.parse("day", "token-bucket 3/1d")), FailurePolicy.FAIL_OPEN);
    try (Tally tally = Tally.builder("mem:").timeSource(now::get).build()) {
      TallyRateLimits limits = new TallyRateLimits(tally, "rl:", Map.of("api", rule), List.of());
      TallyRateLimits.Target target = new TallyRateLimits.Target(rule, "bo", 1);
      limits.check(List.of(target)); // another request, counted by both: 2 left in each
      RateLimitVerdict verdict = limits.check(List.of(target));
      PolicyOutcome day = verdict.outcomes().get(1);
      // The day policy's answer as its failure policy would have given it (the store took nothing).
      RateLimitVerdict partlyFailed = new RateLimitVerdict(List.of(verdict.outcomes().get(0),
          new PolicyOutcome(day.rule(), day.policy(), day.key(), day.limiter(), day.permits(),
              new dev.tally.Decision(true, 3, 3, 0, 0).answeredByFailurePolicy(), day.windowSeconds())));
      tally.limiter("rl:api:day:bo", Policy.parse("day", "token-bucket 3/1d").limit()).refund(1); // as if not taken

      limits.settle(target, 0, partlyFailed.outcomes());

      assertThat(available(tally, "minute")).as("the store's grant, refunded").isEqualTo(2);
      assertThat(available(tally, "day")).as("the failure policy's grant, left alone").isEqualTo(2);
    }
  }

  private static long available(Tally tally, String policy) {
    return tally.limiter("rl:api:" + policy + ":bo", Policy.parse(policy, "token-bucket 3/1d").limit()).available();
  }
}
