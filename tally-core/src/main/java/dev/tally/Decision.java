package dev.tally;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A rate limiter's answer: whether the request was allowed, and what a caller needs to tell its
 * own client (the {@code RateLimit} and {@code Retry-After} header fields).
 *
 * <pre>{@code
 * Decision d = limiter.decide(1);
 * if (!d.allowed()) {
 *   response.status(429).header("Retry-After", d.retryAfter().toSeconds() + 1);
 * }
 * }</pre>
 *
 * <p>For a limiter with several limits the decision is the most restrictive: allowed only if all
 * allow, the smallest remaining (with that limit's {@link #limit()} and {@link #limitIndex()}),
 * the longest retry-after and reset-after. (Retry-after is never
 * if a limit with room now will have lost it by then: a quota whose top-ups end with its period.)
 * {@link #limits()} gives each limit's own state, for answers that describe every policy (the
 * HTTP {@code RateLimit} field has one item per limit, each with its own reset).
 */
public final class Decision {
  /** {@link #retryAfterNanos()} of a request that can never succeed (more than the limit). */
  public static final long NEVER = Long.MAX_VALUE;

  private final boolean allowed;
  private final long remaining;
  private final long limit;
  private final long retryAfterNanos;
  private final long resetAfterNanos;
  private final int limitIndex;
  // Each limit's state after this step, three longs per limit in the limiter's order:
  // remaining, limit, resetAfterNanos. Null when the decision was built without it (one limit:
  // the fields above are that limit's).
  private final long[] perLimit;
  // True when the store did not decide and the limiter's failure policy answered instead.
  private final boolean storeFailed;
  private final Mismatch mismatch;
  private final long storedVersion;

  /**
   * Creates a decision; stores build these, users read them.
   *
   * @param allowed whether the units were granted
   * @param remaining units still available now (after this request), never negative
   * @param limit the limit that decided (capacity, burst, window limit, allowance)
   * @param retryAfterNanos 0 if allowed; else when the same request would succeed, or
   *     {@link #NEVER}
   * @param resetAfterNanos until the limiter is back to its full limit
   */
  public Decision(boolean allowed, long remaining, long limit, long retryAfterNanos, long resetAfterNanos) {
    this(allowed, remaining, limit, retryAfterNanos, resetAfterNanos, 0);
  }

  /**
   * Creates a decision of a limiter with several limits.
   *
   * @param limitIndex which limit decided, counting from 0 in the order the limiter has them
   * @see #Decision(boolean, long, long, long, long)
   */
  public Decision(boolean allowed, long remaining, long limit, long retryAfterNanos, long resetAfterNanos,
      int limitIndex) {
    this(allowed, remaining, limit, retryAfterNanos, resetAfterNanos, limitIndex, null);
  }

  /**
   * Creates a decision of a limiter with several limits, with each limit's own state.
   *
   * @param perLimit three values for each limit, in the limiter's order: its remaining units, its
   *     limit, and the nanoseconds until it is full again; or null for a decision of one limit.
   *     Not copied: the caller hands it over.
   * @see #Decision(boolean, long, long, long, long, int)
   */
  public Decision(boolean allowed, long remaining, long limit, long retryAfterNanos, long resetAfterNanos,
      int limitIndex, long[] perLimit) {
    this(allowed, remaining, limit, retryAfterNanos, resetAfterNanos, limitIndex, perLimit, false);
  }

  private Decision(boolean allowed, long remaining, long limit, long retryAfterNanos, long resetAfterNanos,
      int limitIndex, long[] perLimit, boolean storeFailed) {
    this.storeFailed = storeFailed;
    if (perLimit != null && (perLimit.length == 0 || perLimit.length % 3 != 0)) {
      throw new IllegalArgumentException(
          "perLimit must hold three values (remaining, limit, resetAfterNanos) per limit, not "
              + perLimit.length);
    }
    // One limit's state is the decision's own: kept once, so equal decisions compare equal.
    this.perLimit = perLimit == null || perLimit.length == 3 ? null : perLimit;
    if (limitIndex < 0) {
      throw new IllegalArgumentException("limitIndex must not be negative, not " + limitIndex);
    }
    this.limitIndex = limitIndex;
    this.allowed = allowed;
    this.remaining = Math.max(0, Math.min(remaining, limit));
    this.limit = limit;
    this.retryAfterNanos = allowed ? 0 : Math.max(0, retryAfterNanos);
    this.resetAfterNanos = Math.max(0, resetAfterNanos);
    this.mismatch = Mismatch.NONE;
    this.storedVersion = 0;
  }

  private Decision(Decision d, boolean storeFailed, Mismatch mismatch, long storedVersion) {
    this.storeFailed = storeFailed;
    this.allowed = d.allowed;
    this.remaining = d.remaining;
    this.limit = d.limit;
    this.retryAfterNanos = d.retryAfterNanos;
    this.resetAfterNanos = d.resetAfterNanos;
    this.limitIndex = d.limitIndex;
    this.perLimit = d.perLimit;
    this.mismatch = mismatch;
    this.storedVersion = storedVersion;
  }

  /**
   * How the limits stored with the state compared with the caller's when this decision was
   * taken: see {@link RateLimiter#withVersion}.
   */
  public enum Mismatch {
    /** The stored limits were the caller's (or there were none: the caller's were stored). */
    NONE,
    /** The caller's version was newer: its limits replaced the stored ones, keeping what was consumed. */
    UPGRADED,
    /** The stored version was newer: the stored limits decided, not the caller's. */
    ADOPTED,
    /** Same version, different limits: the stored limits decided, not the caller's. */
    CONFLICT
  }

  /**
   * This decision, reporting that the stored limits differed from the caller's; stores build
   * these from the state machine's outcome.
   *
   * @param storedVersion the version of the limits stored before this decision
   */
  public Decision withMismatch(Mismatch mismatch, long storedVersion) {
    return new Decision(this, storeFailed, Objects.requireNonNull(mismatch, "mismatch"), storedVersion);
  }

  /** How the stored limits compared with the caller's: {@link Mismatch#NONE} when they were the same. */
  public Mismatch mismatch() {
    return mismatch;
  }

  /**
   * The version of the limits stored before this decision, when {@link #mismatch()} is not
   * {@link Mismatch#NONE}; otherwise 0.
   */
  public long storedVersion() {
    return storedVersion;
  }

  /**
   * This decision marked as the answer of a {@link FailurePolicy} to a store that failed: the
   * store decided nothing, so its remaining, limit and resets describe no stored state. Limiters
   * mark their fail-open and fail-closed answers so; a front end should not present their numbers
   * as the client's quota (the HTTP rendering in {@code dev.tally.http} leaves the
   * {@code RateLimit} fields out).
   */
  public Decision answeredByFailurePolicy() {
    return storeFailed ? this : new Decision(this, true, mismatch, storedVersion);
  }

  /**
   * Whether the store failed and a {@link FailurePolicy} answered in its place (see
   * {@link #answeredByFailurePolicy()}): fail-open allowed without counting, fail-closed refused
   * without knowing.
   */
  public boolean storeFailed() {
    return storeFailed;
  }

  /** Whether the request was granted (and its units consumed). */
  public boolean allowed() {
    return allowed;
  }

  /** Units still available now, between 0 and {@link #limit()}. */
  public long remaining() {
    return remaining;
  }

  /** The limit that decided: capacity, burst, window limit or allowance. */
  public long limit() {
    return limit;
  }

  /** Zero when allowed; otherwise how long until the same request would be allowed. */
  public Duration retryAfter() {
    return Duration.ofNanos(retryAfterNanos);
  }

  /** {@link #retryAfter()} in nanoseconds; {@link #NEVER} if the request exceeds the limit. */
  public long retryAfterNanos() {
    return retryAfterNanos;
  }

  /**
   * Which of the limiter's limits decided, from 0, in the order the limiter has them: the one with
   * the fewest units left (the first of those on a tie), whose {@link #limit()} this is. Always 0
   * for a single limit. Tells apart two limits of the same size, e.g. for a {@code RateLimit}
   * header that names the policy that decided.
   */
  public int limitIndex() {
    return limitIndex;
  }

  /** How long until the limiter is back to its full limit. */
  public Duration resetAfter() {
    return Duration.ofNanos(resetAfterNanos);
  }

  /** {@link #resetAfter()} in nanoseconds. */
  public long resetAfterNanos() {
    return resetAfterNanos;
  }

  /**
   * Each limit's state after this step, in the order the limiter has its limits. A decision of
   * one limit (or one a store built without the detail) answers a list of one: this decision's
   * own remaining, limit and reset.
   */
  public List<LimitState> limits() {
    if (perLimit == null) {
      return List.of(new LimitState(limitIndex, remaining, limit, resetAfterNanos));
    }
    List<LimitState> states = new ArrayList<>(perLimit.length / 3);
    for (int i = 0; i < perLimit.length; i += 3) {
      states.add(new LimitState(i / 3, perLimit[i], perLimit[i + 1], perLimit[i + 2]));
    }
    return states;
  }

  /**
   * One limit's state after a step.
   *
   * @param index the limit's place in the limiter, from 0
   * @param remaining units it has left now, between 0 and {@code limit}
   * @param limit its capacity, burst, window limit or allowance
   * @param resetAfterNanos until it is back to its full limit
   */
  public record LimitState(int index, long remaining, long limit, long resetAfterNanos) {
    public LimitState {
      remaining = Math.max(0, Math.min(remaining, limit));
      resetAfterNanos = Math.max(0, resetAfterNanos);
    }

    /** {@link #resetAfterNanos()} as a duration. */
    public Duration resetAfter() {
      return Duration.ofNanos(resetAfterNanos);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Decision d && d.allowed == allowed && d.remaining == remaining
        && d.limit == limit && d.retryAfterNanos == retryAfterNanos && d.resetAfterNanos == resetAfterNanos
        && d.limitIndex == limitIndex && Arrays.equals(d.perLimit, perLimit) && d.storeFailed == storeFailed
        && d.mismatch == mismatch && d.storedVersion == storedVersion;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(remaining * 31 + retryAfterNanos) ^ (allowed ? 1 : 0);
  }

  @Override
  public String toString() {
    return (allowed ? "allowed" : "denied") + "[remaining=" + remaining + "/" + limit
        + (limitIndex == 0 ? "" : " (limit " + limitIndex + ")")
        + (allowed ? "" : ", retryAfter=" + (retryAfterNanos == NEVER ? "never" : retryAfterNanos + "ns"))
        + ", resetAfter=" + resetAfterNanos + "ns"
        + (perLimit == null ? "" : ", limits=" + limits())
        + (mismatch == Mismatch.NONE ? "" : ", " + mismatch + " from version " + storedVersion)
        + (storeFailed ? ", answered by the failure policy: the store failed" : "") + "]";
  }
}
