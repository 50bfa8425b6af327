package dev.tally.spi;

import java.util.Objects;

/**
 * One step on a concurrency limit, as a store sees it: the limit's key and size, the operation,
 * and the lease it is about. {@link ConcurrencyMachine} says what it does; a store runs it
 * atomically on the key's {@link ConcurrencyRecord}.
 *
 * @param key the full key of the limit's state
 * @param maxPermits the caller's limit: the sum of the weights of unexpired leases never exceeds it
 *     after an {@link ConcurrencyOperation#ACQUIRE} grants
 * @param operation what to do
 * @param token the lease's fencing token (its number), for {@code RENEW} and {@code RELEASE}; 0 otherwise
 * @param nonce the lease's random part, chosen by the caller for {@code ACQUIRE} so that a retried
 *     acquire finds the lease it already got; with {@code token}, the lease's identity
 * @param weight the permits an {@code ACQUIRE} asks for, 1 to {@code maxPermits}
 * @param ttlNanos the lease's ttl for {@code ACQUIRE} and {@code RENEW}, positive
 * @param queueTtlNanos for an {@code ACQUIRE} that waits: if refused, keep (or refresh) a ticket in
 *     the limit's queue under the nonce until {@code now + queueTtlNanos}; 0 for an acquire that
 *     does not wait, and for every other operation
 */
public record ConcurrencyCall(String key, long maxPermits, ConcurrencyOperation operation, long token, long nonce,
    long weight, long ttlNanos, long queueTtlNanos) {

  public ConcurrencyCall {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(operation, "operation");
    if (queueTtlNanos < 0) {
      throw new IllegalArgumentException("a ticket's ttl must not be negative, not " + queueTtlNanos);
    }
  }

  /** A call without a ticket. */
  public ConcurrencyCall(String key, long maxPermits, ConcurrencyOperation operation, long token, long nonce,
      long weight, long ttlNanos) {
    this(key, maxPermits, operation, token, nonce, weight, ttlNanos, 0);
  }

  /** An acquire of {@code weight} permits for {@code ttlNanos}, under the caller's {@code nonce}. */
  public static ConcurrencyCall acquire(String key, long maxPermits, long nonce, long weight, long ttlNanos) {
    return new ConcurrencyCall(key, maxPermits, ConcurrencyOperation.ACQUIRE, 0, nonce, weight, ttlNanos);
  }

  /**
   * An acquire by a waiter: if refused, it holds a ticket in the limit's queue until
   * {@code queueTtlNanos} from now, refreshed by each such call under the same {@code nonce}.
   */
  public static ConcurrencyCall acquireQueued(String key, long maxPermits, long nonce, long weight, long ttlNanos,
      long queueTtlNanos) {
    return new ConcurrencyCall(key, maxPermits, ConcurrencyOperation.ACQUIRE, 0, nonce, weight, ttlNanos,
        queueTtlNanos);
  }

  /** The withdrawal of the ticket a waiter that gives up holds under {@code nonce}. */
  public static ConcurrencyCall withdraw(String key, long maxPermits, long nonce) {
    return new ConcurrencyCall(key, maxPermits, ConcurrencyOperation.WITHDRAW, 0, nonce, 0, 0);
  }

  /** A renewal of the lease ({@code token}, {@code nonce}) to {@code ttlNanos} from now. */
  public static ConcurrencyCall renew(String key, long maxPermits, long token, long nonce, long ttlNanos) {
    return new ConcurrencyCall(key, maxPermits, ConcurrencyOperation.RENEW, token, nonce, 0, ttlNanos);
  }

  /** A release of the lease ({@code token}, {@code nonce}). */
  public static ConcurrencyCall release(String key, long maxPermits, long token, long nonce) {
    return new ConcurrencyCall(key, maxPermits, ConcurrencyOperation.RELEASE, token, nonce, 0, 0);
  }

  /** A look at the limit's state. */
  public static ConcurrencyCall peek(String key, long maxPermits) {
    return new ConcurrencyCall(key, maxPermits, ConcurrencyOperation.PEEK, 0, 0, 0, 0);
  }
}
