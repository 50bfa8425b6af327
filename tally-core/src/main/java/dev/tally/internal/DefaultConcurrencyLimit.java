package dev.tally.internal;

import dev.tally.ConcurrencyLimit;
import dev.tally.Lease;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.Store;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/** A {@link ConcurrencyLimit} over a store's {@link Store#concurrency} step. */
final class DefaultConcurrencyLimit implements ConcurrencyLimit {
  /** The longest a waiting head goes without asking the store: bounds the latency of a release in another process. */
  static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  private static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  /**
   * How long the head's ticket in the store's queue outlives its last look: ten of its longest
   * pauses, so a look delayed by a loaded machine keeps its place, and a waiter that died (or
   * froze) holds up the others by at most this after its last look.
   */
  static final long TICKET_TTL_NANOS = 10 * MAX_BACKOFF_NANOS;

  private final String name;
  private final String key;
  private final long maxPermits;
  private final Store store;
  private final ConcurrencyWaiters waiters;

  DefaultConcurrencyLimit(String name, String key, long maxPermits, Store store, ConcurrencyWaiters waiters) {
    if (maxPermits <= 0) {
      throw new IllegalArgumentException("maxPermits of concurrency limit '" + name + "' must be positive, not "
          + maxPermits);
    }
    this.name = name;
    this.key = key;
    this.maxPermits = maxPermits;
    this.store = store;
    this.waiters = waiters;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public long maxPermits() {
    return maxPermits;
  }

  @Override
  public Optional<Lease> tryAcquire(long weight, Duration leaseTtl) {
    ConcurrencyCall call = acquireCall(weight, leaseTtl, 0);
    ConcurrencyWaiters.Line line = waiters.existing(key);
    if (line != null && line.busy()) {
      return Optional.empty(); // others of this process wait for it: no overtaking
    }
    ConcurrencyResult r = store.concurrency(call);
    return r.ok() ? Optional.of(new Held(r.token(), call.nonce(), weight, r.expiresAt())) : Optional.empty();
  }

  @Override
  public Optional<Lease> acquire(long weight, Duration leaseTtl, Duration maxWait) throws InterruptedException {
    // One nonce: a retry finds a grant whose reply was lost, and a look refreshes the same ticket.
    ConcurrencyCall call = acquireCall(weight, leaseTtl, TICKET_TTL_NANOS);
    Objects.requireNonNull(maxWait, "maxWait");
    long wait = maxWait.isNegative() ? 0 : Checks.ttl(maxWait.isZero() ? Duration.ofNanos(1) : maxWait);
    long deadline = System.nanoTime() + wait;
    ConcurrencyWaiters.Line line = waiters.line(key);
    Object ticket = new Object();
    boolean queued = false; // the store may hold a ticket of ours
    boolean granted = false;
    line.lock.lockInterruptibly();
    try {
      line.queue.addLast(ticket);
      try {
        long backoff = FIRST_BACKOFF_NANOS;
        while (true) {
          long pause;
          if (line.queue.peekFirst() == ticket) {
            long releasesBefore = line.releases;
            ConcurrencyResult r;
            line.lock.unlock(); // a release by this process must not wait for the store
            try {
              queued = true;
              r = store.concurrency(call);
            } finally {
              line.lock.lock();
            }
            if (r.ok()) {
              granted = true;
              return Optional.of(new Held(r.token(), call.nonce(), weight, r.expiresAt()));
            }
            if (line.releases != releasesBefore) {
              continue; // released while we asked: ask again now
            }
            pause = backoff;
            if (r.earliestExpiry() != 0) {
              pause = Math.min(pause, Math.max(0, r.earliestExpiry() - r.now()));
            }
            backoff = Math.min(backoff * 2, MAX_BACKOFF_NANOS);
          } else {
            pause = Long.MAX_VALUE;
          }
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            return Optional.empty();
          }
          line.changed.awaitNanos(Math.min(pause, left));
        }
      } finally {
        line.queue.remove(ticket);
        line.changed.signalAll(); // the next in line becomes head
      }
    } finally {
      line.lock.unlock();
      if (queued && !granted) {
        withdraw(call);
      }
    }
  }

  /** Gives up a waiter's place in the store's queue; if the store cannot be reached, the ticket lapses by itself. */
  private void withdraw(ConcurrencyCall call) {
    try {
      store.concurrency(ConcurrencyCall.withdraw(key, maxPermits, call.nonce()));
    } catch (RuntimeException e) {
      // its ticket lapses within TICKET_TTL_NANOS of its last look
    }
  }

  @Override
  public long inUse() {
    return store.concurrency(ConcurrencyCall.peek(key, maxPermits)).inUse();
  }

  @Override
  public Lease lease(String id) {
    Objects.requireNonNull(id, "id");
    int dot = id.indexOf('.');
    try {
      if (dot > 0 && dot < id.length() - 1) {
        long token = Long.parseLong(id.substring(0, dot));
        long nonce = Long.parseUnsignedLong(id.substring(dot + 1), 16);
        if (token > 0) {
          return new Held(token, nonce, 0, 0);
        }
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException("'" + Checks.abbreviate(id) + "' is not a lease id (token.nonce, as"
        + " Lease.id() gives)");
  }

  private ConcurrencyCall acquireCall(long weight, Duration leaseTtl, long queueTtlNanos) {
    if (weight < 1 || weight > maxPermits) {
      throw new IllegalArgumentException("weight must be 1 to maxPermits (" + maxPermits + ") of concurrency limit '"
          + name + "', not " + weight);
    }
    return ConcurrencyCall.acquireQueued(key, maxPermits, ThreadLocalRandom.current().nextLong(), weight,
        leaseTtl(leaseTtl), queueTtlNanos);
  }

  private static long leaseTtl(Duration ttl) {
    Objects.requireNonNull(ttl, "leaseTtl");
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("a lease's ttl must be positive, not " + ttl);
    }
    return Checks.ttl(ttl);
  }

  @Override
  public String toString() {
    return "ConcurrencyLimit[" + name + ", maxPermits=" + maxPermits + "]";
  }

  /** A lease granted here, or named by its id. */
  private final class Held implements Lease {
    private final long token;
    private final long nonce;
    private final long weight;
    private volatile long expiresAt;

    Held(long token, long nonce, long weight, long expiresAt) {
      this.token = token;
      this.nonce = nonce;
      this.weight = weight;
      this.expiresAt = expiresAt;
    }

    @Override
    public String id() {
      return token + "." + Long.toHexString(nonce);
    }

    @Override
    public long fencingToken() {
      return token;
    }

    @Override
    public long weight() {
      return weight;
    }

    @Override
    public Instant expiresAt() {
      long at = expiresAt;
      return Instant.ofEpochSecond(Math.floorDiv(at, 1_000_000_000L), Math.floorMod(at, 1_000_000_000L));
    }

    @Override
    public boolean renew(Duration ttl) {
      ConcurrencyResult r = store.concurrency(ConcurrencyCall.renew(key, maxPermits, token, nonce, leaseTtl(ttl)));
      if (r.ok()) {
        expiresAt = r.expiresAt();
      }
      return r.ok();
    }

    @Override
    public boolean release() {
      ConcurrencyResult r = store.concurrency(ConcurrencyCall.release(key, maxPermits, token, nonce));
      ConcurrencyWaiters.Line line = waiters.existing(key);
      if (line != null) {
        line.released();
      }
      return r.ok();
    }

    @Override
    public String toString() {
      return "Lease[" + name + ", id=" + id() + ", weight=" + weight + ", expiresAt=" + expiresAt() + "]";
    }
  }
}
