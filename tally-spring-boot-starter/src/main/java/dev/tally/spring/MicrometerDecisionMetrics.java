package dev.tally.spring;

import dev.tally.Decision;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts rate-limit decisions in the application's registry: {@code tally.ratelimit.decisions}
 * ({@code tally_ratelimit_decisions_total}), tagged {@code rule}, {@code policy} and
 * {@code outcome} ({@code allowed} or {@code denied}). Answers a failure policy gave for a
 * failed store are counted by {@link dev.tally.TallyMetrics} as {@code tally.failure.policy}.
 */
final class MicrometerDecisionMetrics implements TallyRateLimits.DecisionListener {
  private final MeterRegistry registry;
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();

  MicrometerDecisionMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void onDecision(String rule, String policy, Decision decision) {
    String outcome = decision.allowed() ? "allowed" : "denied";
    counters.computeIfAbsent(rule + '\0' + policy + '\0' + outcome, k -> Counter.builder("tally.ratelimit.decisions")
        .description("Rate-limit decisions, by rule, policy and outcome")
        .tags("rule", rule, "policy", policy, "outcome", outcome)
        .register(registry)).increment();
  }
}
