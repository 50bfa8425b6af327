package dev.tally.spi;

/** What a rate limiter call does to the limiter's state. */
public enum LimiterOperation {
  /** Grant the permits if every limit allows, consuming them; otherwise change nothing. */
  ACQUIRE,
  /** Report the state without changing it. */
  PEEK,
  /** Give permits back, never beyond the limit. */
  REFUND,
  /** Forget the state: the limiter is full again. */
  RESET,
  /** Replace the stored configuration with the caller's, keeping the consumed amount. */
  RECONFIGURE,
  /** Add permits to the current period of quota limits. */
  TOP_UP,
  /**
   * Consume the permits whether or not they fit, taking each limit into a bounded debt: the
   * settlement of a reservation whose real cost exceeded its estimate. Always granted.
   */
  CHARGE
}
