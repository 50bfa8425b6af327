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
 * <p>The configuration is stored with the state, so every process applies the same limits. A
 * handle opened with other limits than the stored ones replaces them if its
 * {@linkplain #withVersion version} is newer (keeping what was consumed), and otherwise applies
 * the stored ones; {@link #reconfigure} replaces them outright. Either way the mismatch is logged
 * and counted ({@link TallyListener#onLimitsMismatch}). State expires by itself once the limiter
 * is full again.
 *
 * <p>Handles are cheap, thread-safe and may be kept for the life of the application.
 */
public interface RateLimiter {

  /** The limiter's name: the key its state is stored under. */
  String name();

  /** The limits this handle was opened with. */
  List<Limit> limits();

  /** The version of {@link #limits()}: 0 unless set by {@link #withVersion}. */
  long version();

  /**
   * The same limiter with its limits at {@code version}, an order chosen by the configuration
   * (a number raised on every change of the limits, or a {@code yyyyMMddHHmmss} stamp). When the
   * limits stored with a key differ from this handle's:
   *
   * <ul>
   *   <li>a newer version than the stored one replaces them on the next call, keeping what was
   *       consumed (as {@link #reconfigure} does), and stores this version;
   *   <li>an older version applies the stored limits (a process not yet redeployed);
   *   <li>the same version applies the stored limits: two configurations claim the version, and
   *       the one every process already applies stays.
   * </ul>
   *
   * Each case is logged once per process and counted on every call. Without a version (0) a
   * handle never replaces stored limits of its own accord.
   *
   * <pre>{@code
   * RateLimiter api = tally.limiter("api:user:42", Limit.tokenBucket(500, Duration.ofMinutes(1)))
   *     .withVersion(2); // was 100 per minute at version 1
   * }</pre>
   *
   * @throws IllegalArgumentException if {@code version} is negative or above 2^45 - 1
   */
  RateLimiter withVersion(long version);

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

  /**
   * Takes {@code permits} units whether or not they fit, for a cost known only after the work was
   * done (Bucket4j's {@code consumeIgnoringRateLimits}): what does not fit becomes the limiter's
   * debt, which later requests wait out. Each limit goes at most one full limit below empty; the
   * rest of the charge is dropped (docs/limiters.md, "Debt"). A cost known in advance is better
   * {@linkplain #reserve reserved}: then the estimate is refused when there is no room, and only
   * the difference is charged.
   *
   * @return the limiter's state after the charge: allowed, {@link Decision#remaining()} 0 in debt,
   *     and a retry-after that includes repaying it; the failure policy's answer if the store
   *     failed
   * @throws IllegalArgumentException if {@code permits} is negative
   */
  Decision charge(long permits);

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
   * empty stays as many units down), under this handle's {@link #version()}, even on a key that
   * has no state yet. Every handle of that version or an older one, in every process, then
   * applies them; a handle of a newer version replaces them again on its next call.
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

  /**
   * Takes {@code estimate} permits, if every limit allows, for work whose real cost is known only
   * when it ends, and holds them until the reservation is {@linkplain Reservation#settle settled}
   * at the real cost (the surplus is given back, or the excess taken into the limiter's debt),
   * {@linkplain Reservation#cancel cancelled}, or until {@code ttl} passes: then it is settled at
   * the estimate, by itself, so a holder that dies leaves its estimate charged and nothing held.
   * A refused reservation takes and holds nothing. See docs/limiters.md, "Reservations".
   *
   * <p>The ttl runs on the store's clock where the store has one (as counters' expiry does). On
   * a handle {@linkplain #withOperationId with an operation id}, the id is the reservation's
   * id, so a reserve retried from anywhere within the retention takes once and answers the same.
   * The failure policy does not apply: a reservation is accounting, and a store that cannot be
   * reached throws {@link StoreException} (what was reserved, if anything, is settled at the
   * estimate when the ttl ends).
   *
   * @param estimate the permits to take now, 1 or more: what the work may cost
   * @param ttl how long the reservation may stay open, positive and no longer than the store's
   *     operation-id retention ({@link Tally.Builder#operationRetention}, 1 hour by default),
   *     which is how long the store remembers the reservation's steps, so that a retried reserve
   *     or settlement applies once for as long as the reservation can be open
   * @throws IllegalArgumentException if {@code estimate} is below 1, {@code ttl} is out of range,
   *     or this handle's operation id is not a reservation id (see {@link #reservation})
   */
  Reservation reserve(long estimate, Duration ttl);

  /**
   * The reservation {@code id} of this limiter, to settle or cancel it from another place (another
   * process, an HTTP handler). Reads nothing: a reservation closed already is refused when settled.
   *
   * @throws IllegalArgumentException if {@code id} is not a reservation id (1 to 120 letters,
   *     digits, {@code - _ . :})
   */
  ReservationHandle reservation(String id);

  /** The asynchronous form of this limiter. */
  AsyncRateLimiter async();

  /**
   * This limiter in leased mode: the handle keeps a local stock of permits the store granted to
   * this process in blocks of up to {@code maxBlock}, and grants from it without a round trip
   * (lock-free), refilling ahead of need in the background. It never grants a permit the store
   * did not grant: each is granted within {@code leaseTime} of the store granting its block (and,
   * for window and quota limits, before that window ends), and unused permits are refunded at
   * that time, when demand falls and on {@link LeasedRateLimiter#close()}. What that guarantees
   * for each algorithm, and what stock parked in other processes costs them, is in
   * docs/limiters.md ("Leased permits").
   *
   * <pre>{@code
   * LeasedRateLimiter api = tally.limiter("api", Limit.tokenBucket(10_000, Duration.ofSeconds(1)))
   *     .leased(100, Duration.ofMillis(200));
   * if (!api.tryAcquire()) { ... }
   * api.close(); // gives the stock back
   * }</pre>
   *
   * <p>The block size follows the observed demand, from 1 up to {@code maxBlock} and to an eighth
   * of the smallest limit. Each call opens a new lease with its own stock.
   *
   * @throws IllegalArgumentException if {@code maxBlock} is below 1 or {@code leaseTime} is not
   *     positive
   */
  LeasedRateLimiter leased(long maxBlock, Duration leaseTime);
}
