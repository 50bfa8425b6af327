package dev.tally.http;

import dev.tally.Decision;
import dev.tally.LimitSpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * The header fields of one or more rate-limit decisions, per the IETF httpapi draft "RateLimit
 * header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-11) in its structured-field
 * syntax, plus {@code Retry-After}:
 *
 * <pre>
 * RateLimit-Policy: "default";q=100;w=60, "hourly";q=1000;w=3600   every policy: quota, window
 * RateLimit: "default";r=40;t=36, "hourly";r=0;t=5                 every policy: remaining, reset
 * Retry-After: 5                                   denied only: seconds until the same request fits
 * </pre>
 *
 * <p>{@code q} is the limit (bucket capacity, GCRA burst, window limit, allowance); {@code w}
 * the time the limit takes to refill completely, its window, or the current calendar period
 * ({@link Policy#windowSeconds()}, the caller's to compute); {@code r} the limit's own remaining
 * and {@code t} its own reset ({@link Decision#limits()}). Every duration is rounded <em>up</em>
 * to a whole second, so a client that waits as told is never early.
 *
 * <p>A limiter adopts the limits its store holds, which another process may have set: {@code q}
 * is always the size of the limit that decided (the decision carries it), and when that differs
 * from the policy's configured {@link Policy#quota()} the item has no {@code w} (the draft makes
 * it optional), since the stored limit's window is not known here. A stored limit of the same
 * size but another window cannot be told apart and is described by the configured window.
 *
 * <p>A decision that a failure policy answered ({@link Decision#storeFailed()}) says nothing of
 * any stored quota: it gives no {@code RateLimit} or {@code RateLimit-Policy} item. A fail-closed
 * answer keeps its {@code Retry-After} (the limiter's suggestion of when to try again);
 * {@link #storeFailed()} tells a front end to answer it as the store being unavailable.
 */
public final class RateLimitFields {
  /** The field names, as the draft spells them. */
  public static final String RATE_LIMIT_POLICY = "RateLimit-Policy";
  public static final String RATE_LIMIT = "RateLimit";
  public static final String RETRY_AFTER = "Retry-After";

  private final String policyField;
  private final String limitField;
  private final OptionalLong retryAfter;
  private final List<String> violated;
  private final String deciding;
  private final boolean storeFailed;

  private RateLimitFields(String policyField, String limitField, OptionalLong retryAfter, List<String> violated,
      String deciding, boolean storeFailed) {
    this.policyField = policyField;
    this.limitField = limitField;
    this.retryAfter = retryAfter;
    this.violated = List.copyOf(violated);
    this.deciding = deciding;
    this.storeFailed = storeFailed;
  }

  /**
   * One quota policy as the fields name it.
   *
   * @param id the policy's name in the fields: 1 to 64 printable ASCII characters without
   *     {@code "} or {@code \}
   * @param quota the limit it was configured with ({@code q} when a limiter has several)
   * @param windowSeconds its {@code w}: whole seconds, at least 1
   */
  public record Policy(String id, long quota, long windowSeconds) {
    public Policy {
      Objects.requireNonNull(id, "id");
      if (id.isEmpty() || id.length() > 64 || !id.chars().allMatch(c -> c >= 0x20 && c < 0x7f && c != '"' && c != '\\')) {
        throw new IllegalArgumentException("a policy id is 1 to 64 printable ASCII characters without"
            + " '\"' or '\\', not '" + id + "'");
      }
      if (windowSeconds < 1) {
        throw new IllegalArgumentException("policy '" + id + "': window must be at least 1 s, not " + windowSeconds);
      }
    }

    /** The policy of {@code spec} at {@code now}: its name, its size and its window. */
    public static Policy of(LimitSpec spec, Instant now) {
      return new Policy(spec.name(), spec.limit().limit(), RateLimitFields.windowSeconds(spec, now));
    }
  }

  /**
   * The fields of one limiter's decision, its limits named by {@code policies} in the limiter's
   * order. {@code q} is the stored limit's size as the decision reports it (each limit's, or the
   * deciding one's), else the policy's {@link Policy#quota()}; {@code w} only when the two agree.
   * Without each limit's state
   * ({@code decision.limits()} not one per policy) {@code RateLimit} has one item, the deciding
   * policy's, its reset bounded by that policy's window.
   *
   * @throws IllegalArgumentException if {@code policies} is empty
   */
  public static RateLimitFields of(Decision decision, List<Policy> policies) {
    Objects.requireNonNull(decision, "decision");
    if (policies.isEmpty()) {
      throw new IllegalArgumentException("a decision needs at least one policy to name it");
    }
    int decidingIndex = decision.limitIndex() < policies.size() ? decision.limitIndex() : 0;
    Policy deciding = policies.get(decidingIndex);
    OptionalLong retry = retryAfter(decision);
    List<String> violated = decision.allowed() ? List.of() : List.of(deciding.id());
    if (decision.storeFailed()) {
      return new RateLimitFields("", "", retry, violated, deciding.id(), true);
    }
    List<Decision.LimitState> each = decision.limits();
    StringBuilder policy = new StringBuilder();
    for (int i = 0; i < policies.size(); i++) {
      Policy p = policies.get(i);
      long q = each.size() == policies.size() ? each.get(i).limit()
          : policies.size() == 1 || i == decidingIndex ? decision.limit() : p.quota();
      separate(policy).append('"').append(p.id()).append("\";q=").append(q);
      // A limit whose stored size differs from the configured one was set elsewhere, its window
      // unknown here: the item describes only the stored limit, never half of each.
      if (q == p.quota()) {
        policy.append(";w=").append(p.windowSeconds());
      }
    }
    StringBuilder limit = new StringBuilder();
    if (each.size() != policies.size()) {
      long reset = ceilSeconds(decision.resetAfterNanos());
      if (policies.size() > 1) {
        reset = Math.min(reset, deciding.windowSeconds());
      }
      item(limit, deciding.id(), decision.remaining(), reset);
    } else {
      for (int i = 0; i < policies.size(); i++) {
        Decision.LimitState l = each.get(i);
        item(separate(limit), policies.get(i).id(), l.remaining(), ceilSeconds(l.resetAfterNanos()));
      }
    }
    return new RateLimitFields(policy.toString(), limit.toString(), retry, violated, deciding.id(), false);
  }

  /**
   * The fields of several limiters' decisions for one request (a rule of several policies, each
   * its own limiter), in order: every item of each, the longest {@code Retry-After} of those
   * denied (none if one can never be granted), every denied policy violated. Decisions a failure
   * policy answered contribute no item.
   *
   * @throws IllegalArgumentException if the lists differ in size
   */
  public static RateLimitFields ofEach(List<Policy> policies, List<Decision> decisions) {
    if (policies.size() != decisions.size()) {
      throw new IllegalArgumentException(policies.size() + " policies for " + decisions.size() + " decisions");
    }
    StringBuilder policy = new StringBuilder();
    StringBuilder limit = new StringBuilder();
    List<String> violated = new ArrayList<>();
    String deciding = null;
    long longest = 0;
    boolean never = false;
    boolean failed = false;
    for (int i = 0; i < decisions.size(); i++) {
      Decision d = decisions.get(i);
      RateLimitFields one = of(d, List.of(policies.get(i)));
      failed |= one.storeFailed;
      if (!one.policyField.isEmpty()) {
        separate(policy).append(one.policyField);
        separate(limit).append(one.limitField);
      }
      if (!d.allowed()) {
        violated.addAll(one.violated);
        deciding = deciding == null ? one.deciding : deciding;
        if (d.retryAfterNanos() == Decision.NEVER) {
          never = true;
        } else {
          longest = Math.max(longest, one.retryAfter.orElse(0));
        }
      }
    }
    if (deciding == null && !policies.isEmpty()) {
      deciding = policies.get(0).id();
    }
    OptionalLong retry = violated.isEmpty() || never ? OptionalLong.empty() : OptionalLong.of(Math.max(1, longest));
    return new RateLimitFields(policy.toString(), limit.toString(), retry, violated, deciding, failed);
  }

  /** {@code RateLimit-Policy}'s value, or empty when no policy has an item. */
  public String rateLimitPolicy() {
    return policyField;
  }

  /** {@code RateLimit}'s value, or empty when no policy has an item. */
  public String rateLimit() {
    return limitField;
  }

  /**
   * {@code Retry-After} in whole seconds, at least 1: for a denial only, and not for a request
   * that can never be granted (more permits than the limit).
   */
  public OptionalLong retryAfterSeconds() {
    return retryAfter;
  }

  /** The policies that denied, for the problem body's {@code violated-policies}. */
  public List<String> violatedPolicies() {
    return violated;
  }

  /** The policy that decided (the first that denied, or the one with least room), or null if none. */
  public String decidingPolicy() {
    return deciding;
  }

  /** Whether a failure policy answered some decision in the store's place. */
  public boolean storeFailed() {
    return storeFailed;
  }

  /** The fields to send, in the order {@code RateLimit-Policy}, {@code RateLimit}, {@code Retry-After}; only those that apply. */
  public Map<String, String> headers() {
    Map<String, String> h = new LinkedHashMap<>();
    if (!policyField.isEmpty()) {
      h.put(RATE_LIMIT_POLICY, policyField);
      h.put(RATE_LIMIT, limitField);
    }
    retryAfter.ifPresent(s -> h.put(RETRY_AFTER, Long.toString(s)));
    return h;
  }

  /**
   * The {@code w} of {@code spec}'s policy at {@code now}: its {@link LimitSpec#window window} in
   * whole seconds, rounded up so that a client that waits as told is never early, and at least 1.
   */
  public static long windowSeconds(LimitSpec spec, Instant now) {
    return Math.max(1, ceilSeconds(spec.window(now).toNanos()));
  }

  /** Nanoseconds as whole seconds, rounded up. */
  public static long ceilSeconds(long nanos) {
    return nanos / 1_000_000_000L + (nanos % 1_000_000_000L == 0 ? 0 : 1);
  }

  /** Nanoseconds as whole milliseconds, rounded up. */
  public static long ceilMillis(long nanos) {
    return nanos / 1_000_000L + (nanos % 1_000_000L == 0 ? 0 : 1);
  }

  private static OptionalLong retryAfter(Decision d) {
    return d.allowed() || d.retryAfterNanos() == Decision.NEVER ? OptionalLong.empty()
        : OptionalLong.of(Math.max(1, ceilSeconds(d.retryAfterNanos())));
  }

  private static StringBuilder separate(StringBuilder b) {
    return b.length() == 0 ? b : b.append(", ");
  }

  private static void item(StringBuilder b, String policy, long remaining, long resetSeconds) {
    b.append('"').append(policy).append("\";r=").append(remaining).append(";t=").append(resetSeconds);
  }

  @Override
  public String toString() {
    return "RateLimitFields" + headers();
  }
}
