package dev.tally;

import java.time.Duration;
import java.util.List;

/**
 * A rate limiter shared by every thread, process and host that opens the same store: each
 * decision is one atomic step on the store, so N+K concurrent requests against a limit of N
 * grant exactly N.
 *
 * <pre>{@code
 * RateLimiter api = tally.limiter("api:user:42",
 *     Limit.tokenBucket(100, Duration.ofMinutes(1)),     // 100 per minute...
 *     Limit.tokenBucket(10, Duration.ofSeconds(1)));     // ...and no more than 10 per second
 * if (!api.tryAcquire()) {
 *   return tooManyRequests();
 * }
 * Decision d = api.decide(5);   // weighted, with remaining, retry-after and reset-after
 * }</pre>
 *
 * <p>The configuration is stored with the state, so every process applies the same limits; a
 * handle opened with different limits adopts the stored ones until {@link #reconfigure} changes
 * them. State expires by itself once the limiter is full again.
 *
 * <p>Handles are cheap, thread-safe and may be kept for the life of the application.
 */
public interface RateLimiter {

  /** The limiter's name: the key its state is stored under. */
  String name();

  /** The limits this handle was opened with. */
  List<Limit> limits();

  /** The policy applied when the store fails: {@code FAIL_OPEN} allows, {@code FAIL_CLOSED} denies. */
  FailurePolicy failurePolicy();

  /** The same limiter with another failure policy. */
  RateLimiter withFailurePolicy(FailurePolicy policy);

  /** Takes one unit if available. Allocation-free on the memory store. */
  boolean tryAcquire();

  /** Takes {@code permits} units if every limit allows, else takes nothing. */
  boolean tryAcquire(long permits);

  /**
   * Takes {@code permits} units if every limit allows, else takes nothing, and says why:
   * remaining, limit, retry-after, reset-after. {@code decide(0)} always allows and reports the
   * state without changing it.
   *
   * @throws IllegalArgumentException if {@code permits} is negative
   */
  Decision decide(long permits);

  /**
   * Takes {@code permits} units, waiting up to {@code maxWait} for them. Returns at once with
   * {@code false} if they cannot be had in time (the wait is computed, not polled); otherwise
   * sleeps exactly until they should be available and tries again.
   *
   * @throws InterruptedException if interrupted while waiting (nothing is taken)
   */
  boolean acquire(long permits, Duration maxWait) throws InterruptedException;

  /** Gives back {@code permits} units taken earlier, never beyond the limit. */
  void refund(long permits);

  /** Units available now, without taking any. */
  long available();

  /**
   * What a one-unit acquire would answer now, without taking anything: refused when nothing is
   * left, with the wait until one unit is. Unlike {@code decide(0)}, which always allows, this
   * answers "is there anything left?".
   */
  Decision peek();

  /** Forgets the state: the limiter is full again. */
  void reset();

  /**
   * Stores new limits for this name, keeping what has been consumed (a bucket that was half
   * empty stays as many units down). Every handle, in every process, then applies them.
   *
   * @return a handle opened with the new limits
   */
  RateLimiter reconfigure(Limit... limits);

  /**
   * A view of this limiter whose acquires, refunds, resets and reconfigurations carry the
   * operation id {@code id}: a repeat within the store's retention window applies nothing and
   * returns the first call's decision, even from another process or host. See
   * {@link Counters#withOperationId}.
   *
   * @throws IllegalArgumentException if the id is empty, too long or has other characters
   */
  RateLimiter withOperationId(String id);

  /** The asynchronous form of this limiter. */
  AsyncRateLimiter async();
}
