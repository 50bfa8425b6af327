package dev.tally.server.http;

import dev.tally.Decision;
import java.time.Instant;
import java.util.List;

/**
 * The header fields of the IETF httpapi draft "RateLimit header fields for HTTP",
 * draft-ietf-httpapi-ratelimit-headers-10, in its structured-field syntax, plus
 * {@code Retry-After}:
 *
 * <pre>
 * RateLimit-Policy: "default";q=100;w=60, "hourly";q=1000;w=3600   every policy: quota, window
 * RateLimit: "hourly";r=0;t=5                     the deciding policy: remaining, its own reset
 * Retry-After: 5                                  denied only: seconds until the same request fits
 * </pre>
 *
 * <p>How Tally's limits map onto the draft's quota policies: {@code q} is the limit (bucket
 * capacity, GCRA burst, window limit, allowance); {@code w} is the time the limit takes to
 * refill completely (buckets, GCRA), the window, or the current calendar period (quotas);
 * {@code r} is {@link Decision#remaining()}. A {@link Decision} reports the state of one limit,
 * the one with the fewest units left, and only the reset of the limiter as a whole (its slowest
 * limit), so {@code RateLimit} carries that one policy, whose reset is the limiter's reset
 * bounded by the policy's own window: a 100/1m bucket never says {@code t=2845} because an hourly
 * window beside it has that long to go. Every duration is rounded <em>up</em> to a whole second,
 * so a client that waits as told is never early.
 */
final class RateLimitFields {
  private RateLimitFields() {}

  static void apply(Reply reply, List<LimitSpec> limits, Decision d, Instant now) {
    StringBuilder policy = new StringBuilder();
    for (LimitSpec s : limits) {
      // A single limiter handle adopts the stored limits: the decision's limit is the truth.
      long q = limits.size() == 1 ? d.limit() : s.limit().limit();
      if (policy.length() > 0) {
        policy.append(", ");
      }
      policy.append('"').append(s.policy()).append("\";q=").append(q)
          .append(";w=").append(s.windowSeconds(now));
    }
    // The decision names the limit that decided, by its place: two limits of one size differ.
    LimitSpec deciding = limits.get(d.limitIndex() < limits.size() ? d.limitIndex() : 0);
    long reset = ceilSeconds(d.resetAfterNanos());
    if (limits.size() > 1) {
      reset = Math.min(reset, deciding.windowSeconds(now));
    }
    reply.header("RateLimit-Policy", policy.toString());
    reply.header("RateLimit", "\"" + deciding.policy() + "\";r=" + d.remaining() + ";t=" + reset);
    if (!d.allowed() && d.retryAfterNanos() != Decision.NEVER) {
      reply.header("Retry-After", Long.toString(Math.max(1, ceilSeconds(d.retryAfterNanos()))));
    }
    reply.decidingPolicy(deciding.policy());
    if (!d.allowed()) {
      reply.withArray("violated-policies", List.of(deciding.policy()));
    }
  }

  /** Nanoseconds as whole seconds, rounded up. */
  static long ceilSeconds(long nanos) {
    return nanos / 1_000_000_000L + (nanos % 1_000_000_000L == 0 ? 0 : 1);
  }
}
