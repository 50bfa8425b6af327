package dev.tally;

import java.time.Duration;
import java.util.Optional;

/**
 * At most {@link #maxPermits()} permits held at once on a name, by every thread, process and host
 * sharing the store: "at most 10 exports per tenant at a time". A permit is held by a
 * {@link Lease} for as long as the work runs, and comes back when the lease is released or when
 * it expires (so a crashed holder's permits come back by themselves).
 *
 * <pre>{@code
 * ConcurrencyLimit exports = tally.concurrency("exports:tenant:42", 10);
 * Optional<Lease> lease = exports.tryAcquire(Duration.ofMinutes(5));
 * }</pre>
 *
 * <p><b>Order of waiters.</b> {@link #acquire} waits in this process's line for the name, served in
 * arrival order; the head of each process's line holds a ticket in the store's queue for the
 * name, shared by every process. A grant (to a waiter, or a {@link #tryAcquire}) never takes a
 * permit that an older ticket needs: it is granted only if the free permits cover it plus every
 * ticket queued before it. So no waiter is held up by anyone who queued after it or by
 * {@link #tryAcquire}s, a heavy waiter is not starved by light ones, and the heads of the
 * processes are served first come, first served. The head is woken by a release in its own
 * process at once, and otherwise looks again after a backoff of at most 50 ms, or at the earliest
 * lease's expiry if sooner; its ticket lapses 500 ms after its last look, so a waiter that dies
 * holds the others up by at most that (one that gives up withdraws its ticket at once).
 * docs/limiters.md states the bounds.
 *
 * <p>Store failures throw a {@link StoreException}; a lease of a store that cannot be reached is
 * neither granted nor released, and comes back by expiry.
 */
public interface ConcurrencyLimit {
  /** The limit's name, the key of its state. */
  String name();

  /** How many permits may be held at once. */
  long maxPermits();

  /** One permit for {@code leaseTtl}, if one is free now and not needed by a waiter. */
  default Optional<Lease> tryAcquire(Duration leaseTtl) {
    return tryAcquire(1, leaseTtl);
  }

  /**
   * {@code weight} permits for {@code leaseTtl}, if that many are free now and not needed by a
   * waiter (of any process) queued for the name: see the class comment.
   *
   * @throws IllegalArgumentException if {@code weight} is not 1 to {@link #maxPermits()}, or the
   *     ttl is not positive
   */
  Optional<Lease> tryAcquire(long weight, Duration leaseTtl);

  /** One permit for {@code leaseTtl}, waiting up to {@code maxWait} for one to free. */
  default Optional<Lease> acquire(Duration leaseTtl, Duration maxWait) throws InterruptedException {
    return acquire(1, leaseTtl, maxWait);
  }

  /**
   * {@code weight} permits for {@code leaseTtl}, waiting up to {@code maxWait} (real time) for them
   * to free: see the class comment for the order of waiters.
   *
   * @return the lease, or empty if {@code maxWait} passed first
   * @throws InterruptedException if interrupted while waiting (nothing is held)
   */
  Optional<Lease> acquire(long weight, Duration leaseTtl, Duration maxWait) throws InterruptedException;

  /** The permits held by unexpired leases now. */
  long inUse();

  /**
   * The lease with this {@link Lease#id() id}, to renew or release it from another place (an HTTP
   * handler, another process). Reads nothing: a lease that is not held answers false to both.
   *
   * @throws IllegalArgumentException if {@code id} is not a lease id of this form
   */
  Lease lease(String id);
}
