package dev.tally.server.http;

import dev.tally.Decision;
import dev.tally.server.app.LimitSpec;
import java.time.Instant;
import java.util.List;

/**
 * The header fields of the IETF httpapi draft "RateLimit header fields for HTTP",
 * draft-ietf-httpapi-ratelimit-headers-11, in its structured-field syntax, plus
 * {@code Retry-After}:
 *
 * <pre>
 * RateLimit-Policy: "default";q=100;w=60, "hourly";q=1000;w=3600   every policy: quota, window
 * RateLimit: "default";r=40;t=36, "hourly";r=0;t=5   every policy: remaining, its own reset
 * Retry-After: 5                                  denied only: seconds until the same request fits
 * </pre>
 *
 * <p>How Tally's limits map onto the draft's quota policies: {@code q} is the limit (bucket
 * capacity, GCRA burst, window limit, allowance); {@code w} is the time the limit takes to
 * refill completely (buckets, GCRA), the window, or the current calendar period (quotas);
 * {@code r} is the limit's own remaining and {@code t} its own reset ({@link Decision#limits()}):
 * a 100/1m bucket never says {@code t=2845} because an hourly window beside it has that long to
 * go. Every duration is rounded <em>up</em> to a whole second, so a client that waits as told is
 * never early. A decision without each limit's state (a store that reports only the most
 * restrictive) gives one item, the deciding policy's, its reset bounded by that policy's window.
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
    reply.header("RateLimit-Policy", policy.toString());
    reply.header("RateLimit", serviceLimits(limits, d, deciding, now));
    if (!d.allowed() && d.retryAfterNanos() != Decision.NEVER) {
      reply.header("Retry-After", Long.toString(Math.max(1, ceilSeconds(d.retryAfterNanos()))));
    }
    reply.decidingPolicy(deciding.policy());
    if (!d.allowed()) {
      reply.withArray("violated-policies", List.of(deciding.policy()));
    }
  }

  /** The {@code RateLimit} field: one item per policy, or the deciding one's without the detail. */
  private static String serviceLimits(List<LimitSpec> limits, Decision d, LimitSpec deciding, Instant now) {
    List<Decision.LimitState> each = d.limits();
    if (each.size() != limits.size()) {
      // Only the most restrictive state, or the stored limits differ from the request's.
      long reset = ceilSeconds(d.resetAfterNanos());
      if (limits.size() > 1) {
        reset = Math.min(reset, deciding.windowSeconds(now));
      }
      return item(new StringBuilder(), deciding.policy(), d.remaining(), reset).toString();
    }
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < limits.size(); i++) {
      if (i > 0) {
        b.append(", ");
      }
      Decision.LimitState l = each.get(i);
      item(b, limits.get(i).policy(), l.remaining(), ceilSeconds(l.resetAfterNanos()));
    }
    return b.toString();
  }

  private static StringBuilder item(StringBuilder b, String policy, long remaining, long resetSeconds) {
    return b.append('"').append(policy).append("\";r=").append(remaining).append(";t=").append(resetSeconds);
  }

  /** Nanoseconds as whole seconds, rounded up. */
  static long ceilSeconds(long nanos) {
    return nanos / 1_000_000_000L + (nanos % 1_000_000_000L == 0 ? 0 : 1);
  }
}
