package dev.tally.server.app;

import dev.tally.JointDecision;
import dev.tally.http.RateLimitFields;
import java.util.List;

/**
 * The answer of a joint decision ({@code POST /v1/limiters:decide}, {@code tally decide}): whether
 * every limiter granted, which refused, and each limiter's own decision as a single limiter's
 * request would answer it.
 */
public record JointLimiterDecision(long permits, JointDecision joint, List<LimiterDecision> limiters) {

  /** The longest wait before the same request may be granted, in milliseconds rounded up; 0 if allowed. */
  public long retryAfterMillis() {
    return RateLimitFields.ceilMillis(joint.retryAfterNanos());
  }

  /** Whether a refusing limiter can never grant the permits. */
  public boolean never() {
    return !joint.allowed() && joint.retryAfterNanos() == dev.tally.Decision.NEVER;
  }
}
