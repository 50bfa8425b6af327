package dev.tally.spring;

import dev.tally.Decision;
import java.util.List;
import java.util.OptionalLong;

/**
 * The answer to one request checked against one or more rules: allowed only if every policy of
 * every rule allowed it, with what each policy said, and the header fields and RFC 9457 body a
 * response carries.
 *
 * <p>The header fields follow the IETF httpapi draft "RateLimit header fields for HTTP",
 * revision draft-ietf-httpapi-ratelimit-headers-11, in its structured-field syntax:
 *
 * <pre>
 * RateLimit-Policy: "api";q=100;w=60, "burst";q=10;w=1     one item per policy: quota, window
 * RateLimit: "api";r=0;t=37, "burst";r=9;t=1              one item per policy: remaining, reset
 * Retry-After: 37                                         denied only
 * </pre>
 *
 * <p>{@code q} is the limit (bucket capacity, GCRA burst, window limit, allowance), {@code w}
 * the time the limit takes to refill completely, its window, or the current calendar period;
 * {@code r} is {@link Decision#remaining()} and {@code t} {@link Decision#resetAfter()}. Every
 * duration is rounded up to a whole second, so a client that waits as told is never early.
 */
public final class RateLimitVerdict {
  /** The problem type the draft defines for a request over its quota. */
  public static final String PROBLEM_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";
  /** The title the draft gives that problem type. */
  public static final String PROBLEM_TITLE = "Request cannot be satisfied as assigned quota has been exceeded";

  private final List<PolicyOutcome> outcomes;
  private final PolicyOutcome deciding;

  RateLimitVerdict(List<PolicyOutcome> outcomes) {
    this.outcomes = List.copyOf(outcomes);
    PolicyOutcome firstDenied = null;
    for (PolicyOutcome o : this.outcomes) {
      if (!o.decision().allowed()) {
        firstDenied = o;
        break;
      }
    }
    this.deciding = firstDenied;
  }

  /** This verdict's policies followed by {@code other}'s: what a response limited twice reports. */
  RateLimitVerdict and(RateLimitVerdict other) {
    List<PolicyOutcome> all = new java.util.ArrayList<>(outcomes);
    all.addAll(other.outcomes);
    return new RateLimitVerdict(all);
  }

  /** Whether every policy allowed the request (and its units were taken from each). */
  public boolean allowed() {
    return deciding == null;
  }

  /** What each policy said, in the order they were checked. */
  public List<PolicyOutcome> outcomes() {
    return outcomes;
  }

  /** The first policy that denied the request, or null if it was allowed. */
  public PolicyOutcome denying() {
    return deciding;
  }

  /** The {@code RateLimit-Policy} field: one item per policy, or empty if none applied. */
  public String rateLimitPolicyField() {
    StringBuilder b = new StringBuilder();
    for (PolicyOutcome o : outcomes) {
      b.append(b.length() == 0 ? "" : ", ").append('"').append(o.policy()).append("\";q=")
          .append(o.decision().limit()).append(";w=").append(o.windowSeconds());
    }
    return b.toString();
  }

  /** The {@code RateLimit} field: one item per policy, each with its remaining units and reset. */
  public String rateLimitField() {
    StringBuilder b = new StringBuilder();
    for (PolicyOutcome o : outcomes) {
      b.append(b.length() == 0 ? "" : ", ").append('"').append(o.policy()).append("\";r=")
          .append(o.decision().remaining()).append(";t=")
          .append(Policy.ceilSeconds(o.decision().resetAfterNanos()));
    }
    return b.toString();
  }

  /**
   * The {@code Retry-After} field in seconds (at least 1): the longest wait of the policies that
   * denied. Empty if allowed, or if a policy can never grant the request (more permits than its
   * limit).
   */
  public OptionalLong retryAfterSeconds() {
    if (deciding == null) {
      return OptionalLong.empty();
    }
    long longest = 0;
    for (PolicyOutcome o : outcomes) {
      Decision d = o.decision();
      if (!d.allowed()) {
        if (d.retryAfterNanos() == Decision.NEVER) {
          return OptionalLong.empty();
        }
        longest = Math.max(longest, d.retryAfterNanos());
      }
    }
    return OptionalLong.of(Math.max(1, Policy.ceilSeconds(longest)));
  }

  /**
   * The RFC 9457 {@code application/problem+json} body of a denial: {@code type}, {@code title},
   * {@code status}, {@code detail}, {@code instance}, the draft's {@code violated-policies}, and the
   * fields the Tally server sends for a denied decision ({@code name}, {@code allowed},
   * {@code permits}, {@code remaining}, {@code limit}, {@code retryAfterMillis},
   * {@code resetAfterMillis}) plus the {@code rule} and the {@code key}.
   *
   * @param instance the request's path, or null
   * @throws IllegalStateException if the request was allowed
   */
  public String problemJson(String instance) {
    if (deciding == null) {
      throw new IllegalStateException("the request was allowed: there is no problem to describe");
    }
    Decision d = deciding.decision();
    boolean never = d.retryAfterNanos() == Decision.NEVER;
    Json j = new Json()
        .field("type", PROBLEM_TYPE)
        .field("title", PROBLEM_TITLE)
        .field("status", 429)
        .field("detail", detail());
    if (instance != null) {
      j.field("instance", instance);
    }
    j.name("violated-policies").beginArray();
    for (PolicyOutcome o : outcomes) {
      if (!o.decision().allowed()) {
        j.element(o.policy());
      }
    }
    j.endArray()
        .field("rule", deciding.rule())
        .field("key", deciding.key())
        .field("name", deciding.limiter())
        .field("allowed", false)
        .field("permits", deciding.permits())
        .field("remaining", d.remaining())
        .field("limit", d.limit());
    if (never) {
      j.nullField("retryAfterMillis");
    } else {
      j.field("retryAfterMillis", ceilMillis(d.retryAfterNanos()));
    }
    j.field("resetAfterMillis", ceilMillis(d.resetAfterNanos()));
    return j.end();
  }

  /** A sentence saying which policy denied and when to come back. */
  public String detail() {
    if (deciding == null) {
      return "allowed";
    }
    Decision d = deciding.decision();
    String which = deciding.policy().equals(deciding.rule()) ? "rate limit '" + deciding.rule() + "'"
        : "policy '" + deciding.policy() + "' of rate limit '" + deciding.rule() + "'";
    String head = which + " exceeded for key '" + deciding.key() + "'";
    if (d.retryAfterNanos() == Decision.NEVER) {
      return head + ": " + deciding.permits() + " permits exceed the limit of " + d.limit()
          + " and can never be granted";
    }
    return head + ": " + d.remaining() + " of " + d.limit() + " left; retry after "
        + retryAfterSeconds().orElse(1) + " s";
  }

  private static long ceilMillis(long nanos) {
    return nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
  }

  @Override
  public String toString() {
    return (allowed() ? "allowed " : "denied ") + outcomes;
  }
}
