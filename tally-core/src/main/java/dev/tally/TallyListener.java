package dev.tally;

import java.time.Duration;
import java.util.List;

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
}
