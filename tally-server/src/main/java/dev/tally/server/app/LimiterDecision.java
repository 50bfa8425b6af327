package dev.tally.server.app;

import dev.tally.Decision;
import dev.tally.LimitSpec;
import dev.tally.http.RateLimitFields;
import java.util.List;
import java.util.Locale;

/**
 * A limiter's decision on {@code permits}, with the limits the request gave; a refund, top-up or
 * settlement also says how much it gave ({@code given}, under the name {@code givenAs}; null for
 * others), and a reservation granted or settled its id ({@code reservation}; null for others).
 */
public record LimiterDecision(String name, long permits, List<LimitSpec> limits,
    Decision decision, String givenAs, long given, String reservation) {
  public LimiterDecision(String name, long permits, List<LimitSpec> limits, Decision decision,
      String givenAs, long given) {
    this(name, permits, limits, decision, givenAs, given, null);
  }

  /** Whether the limits stored with the limiter decided, not the ones the request gave. */
  public boolean storedLimitsDiffer() {
    // the decision carries the deciding limit's size, so a different size is what shows
    LimitSpec asked = limits.get(decision.limitIndex() < limits.size() ? decision.limitIndex() : 0);
    return asked.limit().limit() != decision.limit();
  }

  /**
   * How the stored limits' version compared with the request's, as answers name it:
   * {@code upgraded} (the request's newer limits replaced the stored ones, keeping what was
   * consumed), {@code adopted} (the stored version was newer and decided) or {@code conflict}
   * (same version, other limits: the stored ones decided); null when they agreed, or when
   * neither had a version ({@link #storedLimitsDiffer} tells of that, as before versions).
   */
  public String limitsMismatch() {
    Decision.Mismatch m = decision.mismatch();
    if (m == Decision.Mismatch.NONE
        || (m == Decision.Mismatch.CONFLICT && decision.storedVersion() == 0)) {
      return null;
    }
    return m.name().toLowerCase(Locale.ROOT);
  }

  /** Whether the permits asked for exceed the limit: no wait will grant them. */
  public boolean never() {
    return !decision.allowed() && decision.retryAfterNanos() == Decision.NEVER;
  }

  /** The wait before the same request may be granted, in milliseconds rounded up. */
  public long retryAfterMillis() {
    return RateLimitFields.ceilMillis(decision.retryAfterNanos());
  }

  /** The time until the limiter is full again, in milliseconds rounded up. */
  public long resetAfterMillis() {
    return RateLimitFields.ceilMillis(decision.resetAfterNanos());
  }
}
