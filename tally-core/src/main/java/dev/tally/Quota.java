package dev.tally;

/**
 * A rate limiter over a calendar allowance ({@link Limit#quota}) that an administrator can top
 * up for the current period.
 *
 * <pre>{@code
 * Quota quota = tally.quota("quota:42", 1000, Limit.Period.MONTH, ZoneId.of("UTC"));
 * quota.tryAcquire(999);  // true
 * quota.tryAcquire(1);    // true
 * quota.tryAcquire(1);    // false, until the first of next month or a top-up
 * quota.topUp(100);       // grant 100 more this month
 * }</pre>
 */
public interface Quota extends RateLimiter {

  /** Adds {@code units} to the allowance of the current period only. */
  void topUp(long units);
}
