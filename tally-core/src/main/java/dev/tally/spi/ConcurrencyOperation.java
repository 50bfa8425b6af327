package dev.tally.spi;

/** What a {@link ConcurrencyCall} asks of a concurrency limit's state. */
public enum ConcurrencyOperation {
  /** Grant a lease of the call's weight and ttl if the permits allow; a repeat of the lease's nonce returns it. */
  ACQUIRE,
  /** Extend a live lease to {@code now + ttl}; refused for a lease released or expired. */
  RENEW,
  /** Give a lease's permits back; harmless for a lease released or expired already. */
  RELEASE,
  /** Drop the ticket a waiter that gives up holds in the queue; harmless if it holds none. */
  WITHDRAW,
  /** Report the permits in use and the fencing counter; changes nothing. */
  PEEK
}
