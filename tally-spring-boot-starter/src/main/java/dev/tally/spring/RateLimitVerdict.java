package dev.tally.spring;

import dev.tally.Decision;
import dev.tally.http.Problem;
import dev.tally.http.RateLimitFields;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The answer to one request checked against one or more rules: allowed only if every policy of
 * every rule allowed it, with what each policy said, and the header fields and RFC 9457 body a
 * response carries, rendered by {@link dev.tally.http} as tally-server renders them.
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
 *
 * <p>When the store fails, a rule's failure policy answers instead ({@link Decision#storeFailed()}),
 * and what it says is no quota of the client's: such a policy has no item in either field. A
 * request a fail-closed rule refused for that reason is answered {@code 503} (the store is
 * unavailable), with {@code Retry-After} and a body that says so, not {@code 429}.
 */
public final class RateLimitVerdict {
  /** The problem type the draft defines for a request over its quota. */
  public static final String PROBLEM_TYPE = Problem.QUOTA_EXCEEDED_TYPE;
  /** The title the draft gives that problem type. */
  public static final String PROBLEM_TITLE = Problem.QUOTA_EXCEEDED_TITLE;

  private final List<PolicyOutcome> outcomes;
  private final PolicyOutcome deciding;
  private final RateLimitFields fields;

  RateLimitVerdict(List<PolicyOutcome> outcomes) {
    this.outcomes = List.copyOf(outcomes);
    PolicyOutcome firstDenied = null;
    List<RateLimitFields.Policy> policies = new ArrayList<>(this.outcomes.size());
    List<Decision> decisions = new ArrayList<>(this.outcomes.size());
    for (PolicyOutcome o : this.outcomes) {
      if (firstDenied == null && !o.decision().allowed()) {
        firstDenied = o;
      }
      policies.add(new RateLimitFields.Policy(o.policy(), o.decision().limit(), Math.max(1, o.windowSeconds())));
      decisions.add(o.decision());
    }
    this.deciding = firstDenied;
    this.fields = RateLimitFields.ofEach(policies, decisions);
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

  /**
   * Whether the store failed for some policy and its rule's failure policy answered: a
   * fail-open rule let the request through uncounted, or a fail-closed one refused it.
   */
  public boolean storeFailed() {
    return fields.storeFailed();
  }

  /**
   * The status of a refusal: 429 when a policy's quota is spent, 503 when a fail-closed rule
   * refused because the store did not answer; 200 if allowed.
   */
  public int status() {
    return deciding == null ? 200 : deciding.decision().storeFailed() ? 503 : 429;
  }

  /** What each policy said, in the order they were checked. */
  public List<PolicyOutcome> outcomes() {
    return outcomes;
  }

  /** The first policy that denied the request, or null if it was allowed. */
  public PolicyOutcome denying() {
    return deciding;
  }

  /**
   * The header fields to send, in order: {@code RateLimit-Policy} and {@code RateLimit} (when a
   * policy was decided by the store), {@code Retry-After} (denied only).
   */
  public Map<String, String> headers() {
    return fields.headers();
  }

  /** The {@code RateLimit-Policy} field: one item per policy the store decided, or empty. */
  public String rateLimitPolicyField() {
    return fields.rateLimitPolicy();
  }

  /** The {@code RateLimit} field: one item per policy the store decided, each with its remaining units and reset. */
  public String rateLimitField() {
    return fields.rateLimit();
  }

  /**
   * The {@code Retry-After} field in seconds (at least 1): the longest wait of the policies that
   * denied. Empty if allowed, or if a policy can never grant the request (more permits than its
   * limit).
   */
  public OptionalLong retryAfterSeconds() {
    return fields.retryAfterSeconds();
  }

  /**
   * The RFC 9457 {@code application/problem+json} body of a refusal. For a quota spent (429):
   * {@code type}, {@code title}, {@code status}, {@code detail}, {@code instance}, the draft's
   * {@code violated-policies}, the {@code rule} and the {@code key}, and the fields the Tally
   * server sends for a denied decision ({@code name}, {@code allowed}, {@code permits},
   * {@code remaining}, {@code limit}, {@code retryAfterMillis}, {@code resetAfterMillis}). For a
   * store outage under a fail-closed rule (503): {@code about:blank}, "Service Unavailable", a
   * detail that says so, {@code instance} and the {@code rule}; no invented quota.
   *
   * @param instance the request's path, or null
   * @throws IllegalStateException if the request was allowed
   */
  public String problemJson(String instance) {
    if (deciding == null) {
      throw new IllegalStateException("the request was allowed: there is no problem to describe");
    }
    if (deciding.decision().storeFailed()) {
      Problem p = Problem.storeUnavailable(detail());
      if (instance != null) {
        p.member("instance", instance);
      }
      return p.member("rule", deciding.rule()).toJson();
    }
    Problem p = Problem.quotaExceeded(detail());
    if (instance != null) {
      p.member("instance", instance);
    }
    return p.violatedPolicies(fields)
        .member("rule", deciding.rule())
        .member("key", deciding.key())
        .decision(deciding.limiter(), deciding.permits(), deciding.decision())
        .toJson();
  }

  /** A sentence saying which policy denied and when to come back. */
  public String detail() {
    if (deciding == null) {
      return "allowed";
    }
    Decision d = deciding.decision();
    String which = deciding.policy().equals(deciding.rule()) ? "rate limit '" + deciding.rule() + "'"
        : "policy '" + deciding.policy() + "' of rate limit '" + deciding.rule() + "'";
    if (d.storeFailed()) {
      return "the rate-limit store is unavailable, and " + which + " refuses requests until it answers"
          + " (failure-policy fail-closed); retry after " + retryAfterSeconds().orElse(1) + " s";
    }
    String head = which + " exceeded for key '" + deciding.key() + "'";
    if (d.retryAfterNanos() == Decision.NEVER) {
      return head + ": " + deciding.permits() + " permits exceed the limit of " + d.limit()
          + " and can never be granted";
    }
    return head + ": " + d.remaining() + " of " + d.limit() + " left; retry after "
        + retryAfterSeconds().orElse(1) + " s";
  }

  @Override
  public String toString() {
    return (allowed() ? "allowed " : "denied ") + outcomes;
  }
}
