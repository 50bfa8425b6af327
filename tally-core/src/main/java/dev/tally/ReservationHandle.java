package dev.tally;

/**
 * A reservation named by its id: what settles or cancels it from anywhere that opens the same
 * store (another thread, process or host; an HTTP handler that only has the id). Obtained from
 * {@link RateLimiter#reservation(String)}; a {@link Reservation} is one as well. Reads nothing
 * until settled or cancelled.
 *
 * <p>A reservation is closed once: by a settlement, a cancellation, or its expiry at the end of
 * its ttl, when it is settled at its estimate (the estimate was taken when it was reserved, and
 * simply stays taken). Closing it again is refused with {@link ReservationGoneException} and
 * changes nothing, with one exception that makes retries safe: the very same settlement repeated
 * with the same id and amount, within the store's operation-id retention, is taken for a retry
 * of a call whose reply was lost, and returns the first settlement's decision without applying
 * anything again.
 */
public interface ReservationHandle {
  /** The reservation's id: printable ASCII, what {@link RateLimiter#reservation(String)} takes. */
  String id();

  /** The name of the limiter the reservation was taken on. */
  String limiterName();

  /**
   * Closes the reservation at its real cost {@code actual}: gives back what the estimate took
   * beyond it ({@code estimate - actual}), or takes what it cost beyond the estimate
   * ({@code actual - estimate}) whether or not that fits, into the limiter's debt (see
   * docs/limiters.md, "Debt"), where it delays later requests. An actual equal to the estimate
   * changes nothing but closes the reservation.
   *
   * @param actual the real cost, zero or more
   * @return the limiter's state after the settlement ({@link Decision#remaining()} and when it
   *     next has room); always {@linkplain Decision#allowed() allowed}
   * @throws ReservationGoneException if the reservation was settled (at another amount),
   *     cancelled, or expired after its ttl; nothing was changed
   * @throws IllegalArgumentException if {@code actual} is negative
   * @throws StoreException if the store could not be reached: retrying the same settlement
   *     (with the same amount) is safe and applies it once
   */
  Decision settle(long actual);

  /**
   * Gives the whole estimate back: {@link #settle(long) settle(0)}, for work that was not done.
   *
   * @throws ReservationGoneException if the reservation was settled, cancelled or had expired
   */
  default Decision cancel() {
    return settle(0);
  }
}
