package dev.tally.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.FailurePolicy;
import dev.tally.LimitSpec;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A grant that a failure policy answered took nothing, so what is settled after the response
 * (a reservation's settlement, the units given back after a later refusal) leaves it alone and
 * does not call the store for it; a rule charged after the response, whose reservation the store
 * failed, is answered by its failure policy as a decided rule is.
 */
class SettleAfterFailurePolicyTest {
  private static final Duration TTL = Duration.ofMinutes(5);

  /** A Redis no one listens on, opened lazily: every call that reaches the store fails. */
  private static Tally unreachable(TallyListener listener) throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    return Tally.builder("redis://127.0.0.1:" + port + "?timeout=500ms").deferOpen(true).listener(listener).build();
  }

  private static TallyListener recording(List<String> answeredByPolicy) {
    return new TallyListener() {
      @Override
      public void onFailurePolicyApplied(String operation, String key, FailurePolicy policy, StoreException cause) {
        answeredByPolicy.add(operation);
      }
    };
  }

  @Test
  void aFailOpenGrantIsNotRefundedAndTheStoreIsNotCalled() throws IOException {
    List<String> answeredByPolicy = new CopyOnWriteArrayList<>();
    Rule rule = new Rule("api", List.of(LimitSpec.parse("token-bucket 3/1d", "api")), FailurePolicy.FAIL_OPEN);
    try (Tally tally = unreachable(recording(answeredByPolicy))) {
      TallyRateLimits limits = new TallyRateLimits(tally, "rl:", Map.of("api", rule), List.of());
      TallyRateLimits.Target target = new TallyRateLimits.Target(rule, "ann", 1);
      RateLimitVerdict verdict = limits.check(List.of(target));
      assertThat(verdict.allowed()).isTrue();
      assertThat(verdict.outcomes().get(0).decision().storeFailed()).isTrue();
      assertThat(answeredByPolicy).hasSize(1);

      limits.giveBack(target, verdict.outcomes(), Collections.nCopies(1, null));
      assertThat(answeredByPolicy).as("the refund did not call the store").hasSize(1);

      // That the store would have been called (and the call seen) had the grant been the store's:
      limits.limiter("api", "ann").refund(1);
      assertThat(answeredByPolicy).hasSize(2);
    }
  }

  /**
   * The library applies no failure policy to a reservation: the rule's answers as for its
   * decisions, told to the listener, and the request holds no reservation to settle.
   */
  @Test
  void aReservationTheStoreFailedIsAnsweredByTheRulesFailurePolicyAndHoldsNothing() throws IOException {
    List<String> answeredByPolicy = new CopyOnWriteArrayList<>();
    Rule open = new Rule("open", List.of(LimitSpec.parse("token-bucket 3/1d", "open")), FailurePolicy.FAIL_OPEN);
    Rule closed = new Rule("closed", List.of(LimitSpec.parse("token-bucket 3/1d", "closed")), FailurePolicy.FAIL_CLOSED);
    Rule throwing = new Rule("throwing", List.of(LimitSpec.parse("token-bucket 3/1d", "throwing")), FailurePolicy.THROW);
    try (Tally tally = unreachable(recording(answeredByPolicy))) {
      TallyRateLimits limits = new TallyRateLimits(tally, "rl:",
          Map.of("open", open, "closed", closed, "throwing", throwing), List.of());

      TallyRateLimits.Admission served = limits.admit(List.of(new TallyRateLimits.Target(open, "ann", 2, TTL)));
      assertThat(served.verdict().allowed()).isTrue();
      assertThat(served.verdict().outcomes().get(0).decision().storeFailed()).isTrue();
      assertThat(served.reservations()).containsExactly((dev.tally.Reservation) null);
      assertThat(answeredByPolicy).containsExactly("limiter.peek");

      TallyRateLimits.Admission refused = limits.admit(List.of(new TallyRateLimits.Target(closed, "ann", 2, TTL)));
      assertThat(refused.verdict().allowed()).isFalse();
      assertThat(refused.verdict().outcomes().get(0).decision().storeFailed()).isTrue();
      assertThat(refused.reservations()).containsExactly((dev.tally.Reservation) null);
      assertThat(answeredByPolicy).hasSize(2);

      assertThatThrownBy(() -> limits.admit(List.of(new TallyRateLimits.Target(throwing, "ann", 2, TTL))))
          .isInstanceOf(StoreException.class);
      assertThat(answeredByPolicy).hasSize(2);
    }
  }

  /**
   * One request, two policies: the store decided the first, the failure policy the second (the
   * store failed in between). Giving the units back after a later refusal gives the first its unit
   * back and asks nothing of the second, whose key keeps what it had: a refund there would give it a
   * unit it never spent.
   */
  @Test
  void onlyThePoliciesTheStoreDecidedAreRefunded() {
    AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
    Rule rule = new Rule("api", List.of(LimitSpec.parse("token-bucket 3/1d", "minute"),
        LimitSpec.parse("token-bucket 3/1d", "day")), FailurePolicy.FAIL_OPEN);
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
      tally.limiter("rl:api:day:bo", LimitSpec.parse("token-bucket 3/1d", "day").limit()).refund(1); // as if not taken

      limits.giveBack(target, partlyFailed.outcomes(), Collections.nCopies(2, null));

      assertThat(available(tally, "minute")).as("the store's grant, refunded").isEqualTo(2);
      assertThat(available(tally, "day")).as("the failure policy's grant, left alone").isEqualTo(2);
    }
  }

  /**
   * A rule charged after the response, whose second policy refuses: the first policy's reservation,
   * granted already, is cancelled, so the refused request holds nothing, in units or holds.
   */
  @Test
  void aRefusalByOnePolicyCancelsTheReservationsOfThoseBeforeIt() {
    AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
    Rule rule = new Rule("api", List.of(LimitSpec.parse("token-bucket 3/1d", "minute"),
        LimitSpec.parse("token-bucket 3/1d", "day")), FailurePolicy.FAIL_OPEN);
    try (Tally tally = Tally.builder("mem:").timeSource(now::get).build()) {
      TallyRateLimits limits = new TallyRateLimits(tally, "rl:", Map.of("api", rule), List.of());
      tally.limiter("rl:api:day:bo", LimitSpec.parse("token-bucket 3/1d", "day").limit()).decide(2);

      TallyRateLimits.Admission admission = limits.admit(List.of(new TallyRateLimits.Target(rule, "bo", 2, TTL)));

      assertThat(admission.verdict().allowed()).isFalse();
      assertThat(admission.verdict().denying().policy()).isEqualTo("day");
      assertThat(admission.reservations()).containsExactly(null, null);
      assertThat(available(tally, "minute")).as("the reservation, cancelled").isEqualTo(3);
      assertThat(available(tally, "day")).isEqualTo(1);
      assertThat(tally.counters().keys("tally:hold:")).as("no reservation held").isEmpty();
    }
  }

  private static long available(Tally tally, String policy) {
    return tally.limiter("rl:api:" + policy + ":bo", LimitSpec.parse("token-bucket 3/1d", policy).limit()).available();
  }
}
