package dev.tally;

import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Receives the events an operator needs to see: answers given on behalf of a failed store,
 * denials a store served from a local cache, and the store's {@link CircuitBreaker circuit}
 * opening and closing.
 *
 * <p>Kept to a few callbacks with defaults, like Caffeine's {@code Ticker}, so the core needs
 * no metrics library; {@link TallyMetrics} adapts it to Micrometer when that is on the class
 * path. Implementations are called on the caller's thread (or a store's I/O thread) and must be
 * fast and must not throw.
 */
public interface TallyListener {

  /** A listener that ignores everything. */
  TallyListener NONE = new TallyListener() {};

  /**
   * An operation could not reach its store and its {@link FailurePolicy} answered instead.
   *
   * @param operation the operation, e.g. {@code "incr"} or {@code "limiter.tryAcquire"}
   * @param key the full key (with its group prefix)
   * @param policy the policy that answered ({@code FAIL_OPEN} or {@code FAIL_CLOSED})
   * @param cause the store failure that was swallowed
   */
  default void onFailurePolicyApplied(
      String operation, String key, FailurePolicy policy, StoreException cause) {}

  /**
   * A store answered a rate limiter's request with a denial it already knew of, without asking
   * its backend (Redis' optional local cache of denied limiters, {@code ?denyCache=true}).
   *
   * @param key the limiter's full key
   */
  default void onLocalDenial(String key) {}

  /**
   * The store's circuit opened: it failed {@link CircuitBreaker#failureThreshold()} times in a
   * row, or a probe failed. Calls fail at once for {@code openFor}, then one probes. Called once
   * per opening, on the thread whose call opened it.
   *
   * @param store the scheme of the store's URI ({@code redis}, {@code file}...), never the
   *     whole URI, which may hold a password
   * @param cause the failure that opened it
   * @param openFor how long until the next probe
   */
  default void onCircuitOpened(String store, Throwable cause, Duration openFor) {}

  /**
   * The store's circuit closed: a probe was answered, and calls go to the store again. Called
   * once per closing.
   *
   * @param store the scheme of the store's URI
   */
  default void onCircuitClosed(String store) {}

  /**
   * A call failed at once because the store's circuit was open (or a probe was in flight): the
   * store was not called. Its failure policy answers next, as for any store failure.
   *
   * @param store the scheme of the store's URI
   */
  default void onCircuitRejected(String store) {}

  /**
   * A rate limiter was decided on stored limits that differed from the caller's: the caller's
   * newer version replaced them ({@code UPGRADED}), or the stored ones applied because they were
   * newer ({@code ADOPTED}) or of the same version ({@code CONFLICT}). Called on every such
   * decision; see {@link RateLimiter#withVersion}.
   *
   * @param key the limiter's full key
   * @param mismatch what was done
   * @param limits the caller's limits
   * @param version the caller's version of them
   * @param storedVersion the version of the limits stored before the decision
   */
  default void onLimitsMismatch(String key, Decision.Mismatch mismatch, List<Limit> limits, long version,
      long storedVersion) {}

  /**
   * A {@linkplain RateLimiter#leased leased} limiter opened: {@code stock} reads the permits it
   * holds (cheap, thread-safe), until {@link #onLeaseClosed} with the same supplier.
   *
   * @param key the limiter's full key
   */
  default void onLeaseOpened(String key, LongSupplier stock) {}

  /** The leased limiter whose {@link #onLeaseOpened} gave {@code stock} closed. */
  default void onLeaseClosed(String key, LongSupplier stock) {}

  /**
   * A leased limiter asked the store for a block: {@code granted} of the {@code requested}
   * permits were leased (0 when the store had none left).
   */
  default void onLeaseRefill(String key, long requested, long granted) {}

  /** A leased limiter could not refill its stock: the store failed. */
  default void onLeaseRefillFailed(String key, StoreException cause) {}

  /**
   * A leased limiter gave back {@code permits} unused permits because demand fell or it closed;
   * {@code refunded} is false when they could not be refunded (the store failed, or a window
   * was about to end) and were dropped instead, which under-admits and never over-admits.
   */
  default void onLeaseReturned(String key, long permits, boolean refunded) {}

  /**
   * {@code permits} leased permits reached the end of their lease time (or of the window they
   * were granted in) unused; {@code refunded} as for {@link #onLeaseReturned}.
   */
  default void onLeaseExpired(String key, long permits, boolean refunded) {}
}
