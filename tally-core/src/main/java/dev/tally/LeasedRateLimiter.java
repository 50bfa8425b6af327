package dev.tally;

import java.time.Duration;

/**
 * A {@link RateLimiter} that decides most requests in process, from a stock of permits the store
 * granted to this process in blocks: see {@link RateLimiter#leased(long, Duration)}.
 *
 * <p>Every permit it grants is one the store granted, at most {@link #leaseTime()} earlier (and,
 * for window and quota limits, in the same window); permits not used in time, or when demand
 * falls, or on {@link #close()}, are refunded to the store. Decisions granted from the stock
 * report the {@code remaining} and {@code resetAfter} the store last answered, plus the local
 * stock; a denial's {@code retryAfter} is the store's last, less the time since.
 *
 * <p>Close it when done with it: the stock it holds is parked until then (or until its lease
 * time runs out), and no other process can be granted those permits meanwhile.
 */
public interface LeasedRateLimiter extends RateLimiter, AutoCloseable {

  /** Permits held now for this process, not yet granted to a caller and within their lease time. */
  long stock();

  /** The largest block of permits one store decision may lease. */
  long maxBlock();

  /** How long after the store granted a block its permits may be granted locally. */
  Duration leaseTime();

  /** The plain handle the lease takes its blocks from. */
  RateLimiter unleased();

  /**
   * Returns the stock to the store (never beyond the limit) and stops leasing; later calls decide
   * on the store, one by one, as the {@linkplain #unleased() plain handle} does.
   */
  @Override
  void close();
}
