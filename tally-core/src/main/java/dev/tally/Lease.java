package dev.tally;

import java.time.Duration;
import java.time.Instant;

/**
 * Permits of a {@link ConcurrencyLimit} held until {@link #release() released} or until the lease
 * expires, whichever comes first: a holder that dies gives its permits back when its lease
 * expires, with nobody to clean up after it.
 *
 * <p>A holder that may pause (a long GC, a stalled network) longer than its lease must not trust
 * that it still holds it: pass {@link #fencingToken()} to the resource the permit guards, and let
 * the resource refuse a token lower than the highest it has seen. A paused holder's late write then
 * arrives with a token older than its successor's, and is refused.
 *
 * <pre>{@code
 * try (Lease lease = exports.tryAcquire(Duration.ofMinutes(5)).orElseThrow(TooBusy::new)) {
 *   storage.write(file, lease.fencingToken());
 * } // released
 * }</pre>
 */
public interface Lease extends AutoCloseable {
  /** The lease's identity, unique on its limit; what {@link ConcurrencyLimit#lease} takes back. */
  String id();

  /**
   * The lease's fencing token: a number larger than every token granted before on this limit,
   * never reused, even after every lease has expired.
   */
  long fencingToken();

  /** The permits this lease holds. */
  long weight();

  /** When the lease expires unless renewed, on the store's clock (see docs/limiters.md). */
  Instant expiresAt();

  /**
   * Extends the lease to {@code ttl} from now on the store's clock.
   *
   * @return true if it was renewed; false if it was released or had expired (its permits may
   *     belong to another holder already: stop the work, or acquire again)
   * @throws IllegalArgumentException if {@code ttl} is not positive
   */
  boolean renew(Duration ttl);

  /**
   * Gives the permits back. Harmless on a lease released or expired already.
   *
   * @return true if the lease was held until now; false if it had been released or had expired
   */
  boolean release();

  /** {@link #release()}, for try-with-resources. */
  @Override
  default void close() {
    release();
  }
}
