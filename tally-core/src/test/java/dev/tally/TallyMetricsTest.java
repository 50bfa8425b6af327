package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TallyMetricsTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private long timed(String operation, String outcome) {
    var timer = registry.find("tally.operations")
        .tags("operation", operation, "outcome", outcome).timer();
    return timer == null ? 0 : timer.count();
  }

  @Test
  void operationsAreTimedByOutcomeAndTaggedWithTheSchemeOnly() {
    TallyMetrics metrics = TallyMetrics.of(registry, "mem:");
    try (Tally tally = Tally.builder("mem:").listener(metrics).build()) {
      assertThat(metrics.record("incr", () -> tally.counters().incr("k"))).isEqualTo(1);
      metrics.record("incr", () -> tally.counters().incr("k"));
      RateLimiter one = tally.limiter("l", Limit.tokenBucket(1, Duration.ofHours(1)));
      assertThat(metrics.record("limiter.try", () -> one.decide(1)).allowed()).isTrue();
      assertThat(metrics.record("limiter.try", () -> one.decide(1)).allowed()).isFalse();
      assertThatThrownBy(() -> metrics.record("incr", () -> tally.counters().incr("")))
          .isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(timed("incr", "ok")).isEqualTo(2);
    assertThat(timed("limiter.try", "ok")).isEqualTo(1);
    assertThat(timed("limiter.try", "denied")).isEqualTo(1);
    assertThat(timed("incr", "rejected")).isEqualTo(1);
    assertThat(registry.get("tally.errors").tags("exception", "IllegalArgumentException")
        .counter().count()).isEqualTo(1);
    assertThat(registry.get("tally.operations").timers())
        .allSatisfy(t -> assertThat(t.getId().getTag("store")).isEqualTo("mem"));
  }

  @Test
  void storeFailuresAreErrorsAndFailOpenAnswersAreCounted() {
    TallyMetrics metrics = TallyMetrics.of(registry, "unreachable://user:secret@host");
    try (Tally tally = Tally.builder("unreachable:").listener(metrics).build()) {
      Counters views = tally.counters("views", FailurePolicy.FAIL_OPEN);
      assertThat(metrics.record("incr", () -> views.incr("x"))).isEqualTo(1);
      assertThatThrownBy(() -> metrics.record("get", () -> tally.counters().get("x")))
          .isInstanceOf(StoreUnavailableException.class);
    }
    assertThat(registry.get("tally.failure.policy")
        .tags("store", "unreachable", "operation", "incr", "policy", "fail_open")
        .counter().count()).isEqualTo(1);
    assertThat(timed("get", "error")).isEqualTo(1);
    assertThat(registry.getMeters()).noneSatisfy(
        m -> assertThat(m.getId().getTags().toString()).contains("secret"));
  }

  @Test
  void theCircuitIsAGaugeWithCountsOfOpeningsAndRefusedCalls() {
    TallyMetrics metrics = TallyMetrics.of(registry, "unreachable:");
    assertThat(registry.get("tally.circuit.open").tags("store", "unreachable").gauge().value()).isZero();
    try (Tally tally = Tally.builder("unreachable:").listener(metrics)
        .circuitBreaker(CircuitBreaker.of(2, Duration.ofSeconds(1))).timeSource(() -> 0L).build()) {
      Counters views = tally.counters("views", FailurePolicy.FAIL_OPEN);
      for (int i = 0; i < 5; i++) {
        assertThat(views.incr("x")).isEqualTo(1);
      }
      assertThat(tally.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    }
    assertThat(registry.get("tally.circuit.open").gauge().value()).isEqualTo(1);
    assertThat(registry.get("tally.circuit.opened").counter().count()).isEqualTo(1);
    assertThat(registry.get("tally.circuit.rejected").counter().count()).isEqualTo(3);
    assertThat(registry.get("tally.failure.policy").counter().count()).isEqualTo(5);
    metrics.onCircuitClosed("unreachable");
    assertThat(registry.get("tally.circuit.open").gauge().value()).isZero();
  }
}
