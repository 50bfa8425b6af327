package dev.tally.internal;

import dev.tally.AsyncRateLimiter;
import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Reservation;
import dev.tally.ReservationHandle;
import dev.tally.StoreException;
import dev.tally.TallyListener;
import dev.tally.TimeSource;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * A limiter handle in leased mode: a local stock of permits the store granted to this process in
 * blocks, granted to callers without a round trip. Built over the plain handle's operations only
 * (peek, acquire, refund), so it works on every store as it is.
 *
 * <p>The stock is an immutable array of {@link Block}s replaced under this object's lock by the
 * rare paths (a refill landing, a block retired); the hot path reads the array and takes with one
 * CAS on a block's count, so it never locks. A block is usable until its lease end: {@code d}
 * after the instant just before the store was asked (the store granted it no earlier), and for
 * window and quota limits no later than the end of the window it was granted in, measured the
 * same way. Unused permits are taken out of a block with {@code getAndSet(0)}, so a permit is
 * either granted or returned, never both.
 *
 * <p>All timing reads the store's {@link TimeSource}, so a manual clock drives every rule; the
 * background tick only decides when to look.
 */
final class LeasedLimiter implements LeasedRateLimiter {
  private static final Block[] EMPTY = new Block[0];
  /** No instant yet, for {@link #dryUntil} and {@link #failedAt}. */
  private static final long NEVER = Long.MIN_VALUE;
  /** Tries of peek-then-acquire before a refill gives up for now (another process raced each time). */
  private static final int MAX_TRIES = 3;
  /** A block is at most this fraction of the smallest limit, so stock parked in one process stays small. */
  static final int LIMIT_FRACTION = 8;
  /** The least time before a window's end at which its leftover permits are still refunded. */
  private static final long MIN_REFUND_GUARD_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final ScheduledExecutorService TICKS = Executors.newSingleThreadScheduledExecutor(
      daemon("tally-lease-tick"));
  private static final ExecutorService REFILLS = Executors.newCachedThreadPool(daemon("tally-lease-refill"));

  private final RateLimiter plain; // the caller's handle, with the caller's failure policy
  private final RateLimiter store; // the same limiter, throwing store failures to the lease
  private final Function<StoreException, Decision> failurePolicy;
  private final TimeSource clock;
  private final TallyListener listener;
  private final long maxBlock;
  private final long leaseNanos;
  /**
   * How long after the store's grant a block's permits are granted or refunded: the whole lease
   * time for windows, half of it for buckets. A refund to a bucket that refilled meanwhile
   * credits up to a refill's worth of that time more than the bucket would have had without the
   * block (it was full and wasted some), so a bucket spends half of {@code d} on use and half on
   * that, and grants stay within {@code capacity + rate × (T + d)}.
   */
  private final long useNanos;
  private final long tickNanos;
  private final long blockCap;
  private final LongSupplier stockGauge = this::stock;
  private final ScheduledFuture<?> tick;

  private volatile Block[] blocks = EMPTY;
  private final AtomicReference<CompletableFuture<Void>> refill = new AtomicReference<>();
  private final LongAdder taken = new LongAdder();

  // Written only by the one refill in flight (or under the lock), read by the hot path.
  private volatile long block = 1;
  private volatile Decision lastWord;
  private volatile long lastWordAt;
  private volatile long dryUntil = NEVER; // the store had nothing left for us until then
  private volatile long failedAt = NEVER; // the last refill the store failed
  private volatile boolean plainOnly; // the stored limits are not this handle's: decide plainly
  private volatile boolean closed;
  private long takenAtRefill;
  private long refillAt = Long.MIN_VALUE;
  // Maintenance state, under the lock.
  private long takenAtTick;
  private long activeAt;

  LeasedLimiter(RateLimiter plain, Function<StoreException, Decision> failurePolicy, TimeSource clock,
      TallyListener listener, long maxBlock, Duration leaseTime) {
    if (maxBlock < 1) {
      throw new IllegalArgumentException("maxBlock must be 1 or more, not " + maxBlock);
    }
    Objects.requireNonNull(leaseTime, "leaseTime");
    if (leaseTime.isNegative() || leaseTime.isZero()) {
      throw new IllegalArgumentException("leaseTime must be positive, not " + leaseTime);
    }
    this.plain = plain;
    this.store = plain.withFailurePolicy(FailurePolicy.THROW);
    this.failurePolicy = failurePolicy;
    this.clock = clock;
    this.listener = listener;
    this.maxBlock = maxBlock;
    if (leaseTime.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("leaseTime must be a day or less, not " + leaseTime
          + ": permits leased for longer are parked away from every other process for that long");
    }
    this.leaseNanos = leaseTime.toNanos();
    boolean bucket = false;
    for (Limit l : plain.limits()) {
      bucket |= l.kind() == Limit.Kind.TOKEN_BUCKET || l.kind() == Limit.Kind.LEAKY_BUCKET
          || l.kind() == Limit.Kind.GCRA;
    }
    this.useNanos = bucket ? Math.max(1, leaseNanos / 2) : leaseNanos;
    long smallest = Long.MAX_VALUE;
    for (Limit l : plain.limits()) {
      smallest = Math.min(smallest, l.limit());
    }
    this.blockCap = Math.max(1, Math.min(maxBlock, smallest / LIMIT_FRACTION));
    this.activeAt = clock.nanos();
    long period = Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(useNanos / 4, TimeUnit.SECONDS.toNanos(1)));
    this.tickNanos = period;
    WeakReference<LeasedLimiter> self = new WeakReference<>(this);
    this.tick = TICKS.scheduleAtFixedRate(() -> {
      LeasedLimiter l = self.get();
      if (l == null) {
        throw new Collected(); // ends the schedule of a lease nobody holds
      }
      l.maintain();
    }, period, period, TimeUnit.NANOSECONDS);
    notify(() -> listener.onLeaseOpened(plain.name(), stockGauge));
  }

  /** Stops a schedule without logging: thrown by a tick whose lease was collected. */
  private static final class Collected extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Collected() {
      super(null, null, false, false);
    }
  }

  /** Permits granted to this process in one store decision, usable until {@link #end}. */
  private static final class Block {
    final AtomicLong left;
    final long end;
    /**
     * Until when unused permits may go back: a bucket's block until its end, a window's until
     * shortly before the window ends (a refund landing in the next window would credit that
     * one). Permits retired later are dropped, which under-admits and never over-admits.
     */
    final long refundBefore;

    Block(long permits, long end, long refundBefore) {
      this.left = new AtomicLong(permits);
      this.end = end;
      this.refundBefore = refundBefore;
    }
  }

  // ------------------------------------------------------------------ the hot path

  /** Takes {@code n} permits from one unexpired block; the permits left there after, or -1. */
  private long take(long n, long now) {
    for (Block b : blocks) {
      if (now - b.end >= 0) {
        continue;
      }
      for (long left = b.left.get(); left >= n; left = b.left.get()) {
        if (b.left.compareAndSet(left, left - n)) {
          taken.add(n);
          return left - n;
        }
      }
    }
    return -1;
  }

  @Override
  public boolean tryAcquire() {
    return tryAcquire(1);
  }

  @Override
  public boolean tryAcquire(long permits) {
    checkPermits(permits);
    if (permits == 0 || plainOnly || closed) {
      return plain.tryAcquire(permits);
    }
    long now = clock.nanos();
    long left = take(permits, now);
    if (left >= 0) {
      aheadOfNeed(left, now);
      return true;
    }
    return slow(permits).allowed();
  }

  @Override
  public Decision decide(long permits) {
    checkPermits(permits);
    if (permits == 0 || plainOnly || closed) {
      return plain.decide(permits);
    }
    long now = clock.nanos();
    long left = take(permits, now);
    if (left >= 0) {
      aheadOfNeed(left, now);
      return granted(now);
    }
    return slow(permits);
  }

  /** Starts a refill in the background when the stock runs low, so callers rarely wait. */
  private void aheadOfNeed(long leftInBlock, long now) {
    if (leftInBlock >= Math.max(1, block / 2) || refill.get() != null
        || (failedAt != NEVER && now - failedAt < Math.max(1, leaseNanos / 8))) {
      return;
    }
    if (stock(now) < Math.max(1, block / 2)) {
      CompletableFuture<Void> f = new CompletableFuture<>();
      if (refill.compareAndSet(null, f)) {
        try {
          REFILLS.execute(() -> runRefill(f, 1));
        } catch (RuntimeException rejected) {
          refill.compareAndSet(f, null);
          f.complete(null);
        }
      }
    }
  }

  /**
   * The stock could not serve: waits for the refill in flight, or runs one on this thread, and
   * takes again; a store failure then gets the failure policy's answer, and a store with nothing
   * left the denial it last gave.
   */
  private Decision slow(long permits) {
    if (permits > blockCap) {
      return plain.decide(permits); // more than a block can hold: the store decides it as one
    }
    for (int round = 0; round < 2; round++) {
      long now = clock.nanos();
      retireExpired(now, 0);
      if (dryUntil != NEVER && now - dryUntil < 0) {
        return denied(permits, now);
      }
      CompletableFuture<Void> f;
      for (;;) {
        f = refill.get();
        if (f != null) {
          break;
        }
        CompletableFuture<Void> mine = new CompletableFuture<>();
        if (refill.compareAndSet(null, mine)) {
          runRefill(mine, permits); // on this thread: it would wait for it anyway
          f = mine;
          break;
        }
      }
      try {
        f.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof StoreException se) {
          now = clock.nanos();
          if (take(permits, now) >= 0) {
            return granted(now); // another refill landed meanwhile
          }
          return failurePolicy.apply(se);
        }
        throw e;
      }
      now = clock.nanos();
      long left = take(permits, now);
      if (left >= 0) {
        aheadOfNeed(left, now);
        return granted(now);
      }
      if (plainOnly || closed) {
        return plain.decide(permits);
      }
    }
    return denied(permits, clock.nanos());
  }

  // ------------------------------------------------------------------ refills

  /**
   * Runs one refill of at least {@code atLeast} permits (a caller's request is granted from one
   * block) and completes {@code f}; clears the in-flight slot before completing.
   */
  private void runRefill(CompletableFuture<Void> f, long atLeast) {
    try {
      refillOnce(atLeast);
      refill.compareAndSet(f, null);
      f.complete(null);
    } catch (StoreException e) {
      failedAt = clock.nanos();
      notify(() -> listener.onLeaseRefillFailed(plain.name(), e));
      refill.compareAndSet(f, null);
      f.completeExceptionally(e);
    } catch (RuntimeException | Error e) {
      refill.compareAndSet(f, null);
      f.completeExceptionally(e);
      throw e;
    }
  }

  /** Leases one block, sized to the demand seen since the last refill. */
  private void refillOnce(long atLeast) {
    long now = clock.nanos();
    long want = Math.max(atLeast, nextBlockSize(now));
    Grant g = grantUpTo(want);
    if (g.decision.mismatch() == Decision.Mismatch.ADOPTED || g.decision.mismatch() == Decision.Mismatch.CONFLICT) {
      // Other limits are stored for this key: their windows are not this handle's to reason about.
      plainOnly = true;
      if (g.permits > 0) {
        refundQuietly(g.permits);
      }
      return;
    }
    long r = clock.nanos();
    lastWord = g.decision;
    lastWordAt = r;
    notify(() -> listener.onLeaseRefill(plain.name(), want, g.permits));
    if (g.permits == 0) {
      long retry = g.decision.retryAfterNanos();
      dryUntil = retry == Decision.NEVER ? r + leaseNanos : r + Math.max(1, retry);
      block = Math.max(1, block / 2);
      return;
    }
    dryUntil = NEVER;
    failedAt = NEVER;
    long end = g.askedAt + useNanos;
    long refundBefore = useNanos < leaseNanos ? end : Long.MAX_VALUE;
    long window = windowLeft(g.decision);
    if (window != Long.MAX_VALUE) {
      long windowEnd = g.askedAt + window;
      end = Math.min(end, windowEnd);
      // A refund must reach the store before the window ends, or it would credit the next one.
      refundBefore = Math.min(refundBefore, windowEnd - Math.max(MIN_REFUND_GUARD_NANOS, 2 * (r - g.askedAt)));
    }
    addBlock(new Block(g.permits, end, refundBefore));
  }

  /** What one store decision leased: {@code permits} (0 or more), asked for at {@code askedAt}. */
  private record Grant(long permits, long askedAt, Decision decision) {}

  /**
   * Leases up to {@code upTo} permits: as many as the limits allow now. The one place a store's
   * partial grant ("take up to k, say how many") would go: with it this is one round trip; over
   * today's operations it is a peek for what remains, then an acquire of that much, tried again
   * smaller when another process took some in between.
   */
  private Grant grantUpTo(long upTo) {
    Decision seen = null;
    for (int i = 0; i < MAX_TRIES; i++) {
      Decision p = store.peek();
      if (!p.allowed()) {
        return new Grant(0, 0, p);
      }
      long m = Math.min(upTo, Math.max(1, p.remaining()));
      long askedAt = clock.nanos();
      Decision d = store.decide(m);
      if (d.allowed()) {
        return new Grant(m, askedAt, d);
      }
      seen = d;
      upTo = Math.max(1, m / 2);
    }
    return new Grant(0, 0, seen);
  }

  /**
   * The block size for the next refill: enough for half a lease time at the demand seen since
   * the last refill, at most twice the last size and at least half, within 1 and the cap.
   */
  private long nextBlockSize(long now) {
    long used = taken.sum();
    long sinceUsed = used - takenAtRefill;
    long elapsed = refillAt == Long.MIN_VALUE ? 0 : now - refillAt;
    takenAtRefill = used;
    refillAt = now;
    long k = block;
    long target;
    if (sinceUsed <= 0) {
      target = k;
    } else if (elapsed <= 0) {
      target = 2 * k;
    } else {
      double perLease = (double) sinceUsed * (useNanos / 2.0) / elapsed;
      target = perLease >= Long.MAX_VALUE / 4.0 ? Long.MAX_VALUE / 4 : (long) Math.ceil(perLease);
    }
    long next = Math.max(1, Math.min(blockCap, Math.max(k / 2, Math.min(2 * k, target))));
    block = next;
    return next;
  }

  /**
   * Nanoseconds from the store's decision to the end of the earliest window or quota period the
   * grant counted in, or {@link Long#MAX_VALUE} when no limit is windowed.
   */
  private long windowLeft(Decision d) {
    List<Limit> limits = plain.limits();
    List<Decision.LimitState> states = d.limits();
    long left = Long.MAX_VALUE;
    for (int i = 0; i < limits.size() && i < states.size(); i++) {
      Limit l = limits.get(i);
      long reset = states.get(i).resetAfterNanos();
      switch (l.kind()) {
        case FIXED_WINDOW, QUOTA -> left = Math.min(left, reset);
        // A sliding window's count weighs through the next window too; its own window ends one before.
        case SLIDING_WINDOW -> left = Math.min(left, reset - l.intervalNanos());
        default -> { }
      }
    }
    return left == Long.MAX_VALUE ? left : Math.max(0, left);
  }

  private synchronized void addBlock(Block b) {
    if (closed) {
      returnPermits(b, b.left.getAndSet(0), clock.nanos(), false);
      return;
    }
    List<Block> live = new ArrayList<>(blocks.length + 1);
    for (Block old : blocks) {
      // An ended block that still holds permits stays for retireExpired below to take them out
      // and report them (refunded or dropped); left out here, they would vanish unreported.
      if (old.left.get() > 0) {
        live.add(old);
      }
    }
    live.add(b);
    blocks = live.toArray(EMPTY);
    retireExpired(clock.nanos(), 0);
  }

  // ------------------------------------------------------------------ returning stock

  /**
   * Takes every block that ends within {@code horizon} of {@code now} out of the stock, and
   * refunds what it had left while that is still safe (see {@link Block#refundBefore}).
   */
  private void retireExpired(long now, long horizon) {
    Block[] bs = blocks;
    boolean any = false;
    for (Block b : bs) {
      if (now + horizon - b.end >= 0) {
        any = true;
        break;
      }
    }
    if (!any) {
      return;
    }
    long expired = 0;
    synchronized (this) {
      List<Block> live = new ArrayList<>(blocks.length);
      for (Block b : blocks) {
        if (now + horizon - b.end >= 0) {
          long n = b.left.getAndSet(0);
          if (n > 0) {
            expired += n;
            returnPermits(b, n, now, true);
          }
        } else {
          live.add(b);
        }
      }
      blocks = live.toArray(EMPTY);
      if (expired > 0) {
        block = Math.max(1, block / 2); // a block outlived its use: lease less next time
      }
    }
  }

  /** Refunds {@code n} permits of {@code b} to the store when that is still safe, and reports it. */
  private void returnPermits(Block b, long n, long now, boolean expiry) {
    boolean refunded = now - b.refundBefore < 0 && refundQuietly(n);
    notify(() -> {
      if (expiry) {
        listener.onLeaseExpired(plain.name(), n, refunded);
      } else {
        listener.onLeaseReturned(plain.name(), n, refunded);
      }
    });
  }

  private boolean refundQuietly(long n) {
    try {
      store.refund(n);
      return true;
    } catch (StoreException e) {
      return false; // dropped: the store keeps them counted, which under-admits and never over-admits
    }
  }

  /** Returns every permit in stock (demand fell, the handle closed, a reset). */
  private synchronized void returnAll(long now) {
    for (Block b : blocks) {
      long n = b.left.getAndSet(0);
      if (n > 0) {
        returnPermits(b, n, now, now - b.end >= 0);
      }
    }
    blocks = EMPTY;
  }

  /**
   * The background tick: retires expired blocks, and returns the stock when nothing was taken
   * from it for half a lease time (demand fell).
   */
  void maintain() {
    long now = clock.nanos();
    retireExpired(now, tickNanos); // a block ending before the next tick goes back while it may
    synchronized (this) {
      long t = taken.sum();
      if (t != takenAtTick) {
        takenAtTick = t;
        activeAt = now;
      } else if (now - activeAt >= useNanos / 2 && blocks.length > 0) {
        returnAll(now);
        block = Math.max(1, block / 2);
      }
    }
  }

  // ------------------------------------------------------------------ answers

  /** Permits in stock and within their lease time at {@code now}. */
  private long stock(long now) {
    long sum = 0;
    for (Block b : blocks) {
      if (now - b.end < 0) {
        sum += b.left.get();
      }
    }
    return sum;
  }

  @Override
  public long stock() {
    return stock(clock.nanos());
  }

  /** A grant from the stock: the store's last word, with the stock added to its remaining. */
  private Decision granted(long now) {
    Decision w = lastWord;
    long stock = stock(now);
    if (w == null) {
      long limit = plain.limits().get(0).limit();
      return new Decision(true, Math.min(limit, stock), limit, 0, 0);
    }
    long since = Math.max(0, now - lastWordAt);
    return new Decision(true, Arith.saturatedAdd(w.remaining(), stock), w.limit(), 0,
        Math.max(0, w.resetAfterNanos() - since), w.limitIndex());
  }

  /** A denial from the store's last word, its waits shortened by the time since. */
  private Decision denied(long permits, long now) {
    Decision w = lastWord;
    if (w == null) {
      return plain.decide(permits); // no word yet to answer with: the store decides this one
    }
    long since = Math.max(0, now - lastWordAt);
    long retry = w.retryAfterNanos() == Decision.NEVER ? Decision.NEVER
        : Math.max(1, w.retryAfterNanos() - since);
    return new Decision(false, Arith.saturatedAdd(w.allowed() ? w.remaining() : 0, stock(now)), w.limit(),
        retry, Math.max(0, w.resetAfterNanos() - since), w.limitIndex());
  }

  // ------------------------------------------------------------------ the rest of the handle

  @Override
  public String name() {
    return plain.name();
  }

  @Override
  public List<Limit> limits() {
    return plain.limits();
  }

  @Override
  public long version() {
    return plain.version();
  }

  @Override
  public long maxBlock() {
    return maxBlock;
  }

  @Override
  public Duration leaseTime() {
    return Duration.ofNanos(leaseNanos);
  }

  /** A new lease of the same plain handle, with its own stock. */
  @Override
  public LeasedRateLimiter leased(long maxBlock, Duration leaseTime) {
    return plain.leased(maxBlock, leaseTime);
  }

  @Override
  public RateLimiter unleased() {
    return plain;
  }

  /** A new lease, with its own stock, of the handle at {@code version}. */
  @Override
  public LeasedRateLimiter withVersion(long version) {
    return plain.withVersion(version).leased(maxBlock, leaseTime());
  }

  @Override
  public FailurePolicy failurePolicy() {
    return plain.failurePolicy();
  }

  /** A new lease, with its own stock, of the handle with {@code policy}. */
  @Override
  public LeasedRateLimiter withFailurePolicy(FailurePolicy policy) {
    return plain.withFailurePolicy(policy).leased(maxBlock, leaseTime());
  }

  @Override
  public boolean acquire(long permits, Duration maxWait) throws InterruptedException {
    checkPermits(permits);
    Objects.requireNonNull(maxWait, "maxWait");
    long deadline = System.nanoTime() + Math.max(0, maxWait.toNanos());
    for (;;) {
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
      Decision d = decide(permits);
      if (d.allowed()) {
        return true;
      }
      long wait = d.retryAfterNanos();
      if (wait == Decision.NEVER || wait > deadline - System.nanoTime()) {
        return false;
      }
      TimeUnit.NANOSECONDS.sleep(Math.max(wait, 1_000));
    }
  }

  /** Refunds to the store: the permits were the store's grant to this process. */
  @Override
  public void refund(long permits) {
    plain.refund(permits);
  }

  /** To the store, as a refund: the stock was taken from it already, and a debt is the store's. */
  @Override
  public Decision charge(long permits) {
    return plain.charge(permits);
  }

  @Override
  public long available() {
    return Arith.saturatedAdd(plain.available(), stock());
  }

  @Override
  public Decision peek() {
    long now = clock.nanos();
    if (stock(now) > 0) {
      return granted(now);
    }
    return plain.peek();
  }

  /** Drops the stock (the limiter is full again after this) and resets the store's state. */
  @Override
  public void reset() {
    synchronized (this) {
      for (Block b : blocks) {
        b.left.set(0);
      }
      blocks = EMPTY;
    }
    plain.reset();
  }

  /** Returns the stock, then reconfigures; the handle answered is a new lease of the new limits. */
  @Override
  public LeasedRateLimiter reconfigure(Limit... limits) {
    returnAll(clock.nanos());
    return plain.reconfigure(limits).leased(maxBlock, leaseTime());
  }

  /** Reserves on the store, past the stock: a reservation is held and settled there. */
  @Override
  public Reservation reserve(long estimate, Duration ttl) {
    return plain.reserve(estimate, ttl);
  }

  @Override
  public ReservationHandle reservation(String id) {
    return plain.reservation(id);
  }

  /** The plain handle with that operation id: a leased grant has no store operation to repeat. */
  @Override
  public RateLimiter withOperationId(String id) {
    return plain.withOperationId(id);
  }

  /**
   * Grants from the stock at once; otherwise asks the store as the plain handle does (and starts
   * a refill), so no caller's thread waits.
   */
  @Override
  public AsyncRateLimiter async() {
    AsyncRateLimiter a = plain.async();
    return new AsyncRateLimiter() {
      @Override
      public RateLimiter sync() {
        return LeasedLimiter.this;
      }

      @Override
      public String name() {
        return plain.name();
      }

      @Override
      public AsyncRateLimiter withOperationId(String id) {
        return a.withOperationId(id);
      }

      @Override
      public CompletionStage<Boolean> tryAcquire(long permits) {
        return decide(permits).thenApply(Decision::allowed);
      }

      @Override
      public CompletionStage<Decision> decide(long permits) {
        checkPermits(permits);
        if (permits > 0 && !plainOnly && !closed) {
          long now = clock.nanos();
          long left = take(permits, now);
          if (left >= 0) {
            aheadOfNeed(left, now);
            return CompletableFuture.completedFuture(granted(now));
          }
          aheadOfNeed(0, now);
        }
        return a.decide(permits);
      }

      @Override
      public CompletionStage<Void> refund(long permits) {
        return a.refund(permits);
      }

      @Override
      public CompletionStage<Decision> charge(long permits) {
        return a.charge(permits);
      }

      @Override
      public CompletionStage<Long> available() {
        long stock = stock();
        return a.available().thenApply(n -> Arith.saturatedAdd(n, stock));
      }

      @Override
      public CompletionStage<Void> reset() {
        return CompletableFuture.runAsync(LeasedLimiter.this::reset, REFILLS);
      }
    };
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    tick.cancel(false);
    awaitRefill(); // a block landing after this would find the lease closed and refund itself
    returnAll(clock.nanos());
    notify(() -> listener.onLeaseClosed(plain.name(), stockGauge));
  }

  /** Waits for the refill in flight, if any, to land or fail. */
  void awaitRefill() {
    CompletableFuture<Void> f = refill.get();
    if (f != null) {
      try {
        f.join();
      } catch (CompletionException | CancellationException ignored) {
        // its failure was reported where it happened
      }
    }
  }

  private static void notify(Runnable event) {
    try {
      event.run();
    } catch (RuntimeException listenerBug) {
      System.getLogger("dev.tally").log(System.Logger.Level.ERROR, "TallyListener threw; ignoring",
          listenerBug);
    }
  }

  private static void checkPermits(long permits) {
    if (permits < 0) {
      throw new IllegalArgumentException("permits must be zero or more, not " + permits
          + "; use refund() to give units back");
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  @Override
  public String toString() {
    return "LeasedRateLimiter[" + plain.name() + ", " + plain.limits() + ", maxBlock " + maxBlock
        + ", lease " + leaseTime() + "]";
  }
}
