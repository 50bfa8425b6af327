package dev.tally;

/**
 * Receives the events an operator needs to see: answers given on behalf of a failed store, and
 * denials a store served from a local cache.
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
}
