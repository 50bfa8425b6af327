package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.TimeSource;
import dev.tally.WrongKindException;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyMachine;
import dev.tally.spi.ConcurrencyRecord;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.LimiterShortcut;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.CounterMath;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * The {@code mem:} store: counters in a {@link ConcurrentHashMap}, lock-free on the hot path.
 *
 * <h2>Why not {@code ConcurrentHashMap<String, AtomicLong>}</h2>
 *
 * An {@code AtomicLong} per key makes {@code incr} lock-free but gets {@code pop} wrong:
 * {@code pop} must read the value and remove the key in one step, and an increment that fetched
 * the {@code AtomicLong} just before the removal adds to an object nobody will read again: a
 * lost count. The same race breaks {@code delete}, expiry resets and transactions. Locking
 * every cell fixes it and costs the hot path a lock.
 *
 * <h2>Sealed cells</h2>
 *
 * A {@link Cell} holds a value ({@code bits}: a long, or a double's raw bits) that only ever
 * changes by compare-and-swap, and everything else (integer or floating, expiry) in final
 * fields. {@code incr} on a live integer cell is a CAS loop on {@code bits}: no lock, no
 * allocation. Every other change <em>replaces</em> the cell: the writer
 * <ol>
 *   <li>wins {@code state: LIVE -> SEALED} (one writer per cell; others wait, see below),
 *   <li>swaps {@code bits} to {@link #SEALED_BITS} with {@code getAndSet}, which returns the
 *       value including every increment that got in before, and makes every later increment's
 *       CAS fail (an increment never expects {@code SEALED_BITS}),
 *   <li>computes the change and puts a fresh cell in the map (or removes the mapping).
 * </ol>
 * An operation that finds a sealed cell re-reads the map until the new cell is installed; the
 * window is a few instructions long. A missing key is locked the same way by inserting a sealed
 * placeholder, which makes "create if missing" race-free. Transactions seal all their keys in
 * sorted order (so two transactions cannot deadlock), apply, then install them all.
 *
 * <p>{@code Long.MIN_VALUE} is the sealed marker, so the fast path never writes it; a counter that
 * legitimately reaches {@code Long.MIN_VALUE} (or {@code -0.0}, the same bits) goes through the
 * slow path, which stores it in a live cell. A reader seeing the marker in a cell whose state is
 * still {@code LIVE} knows it is the value, because sealing changes the state first.
 *
 * <h2>One map, two kinds</h2>
 *
 * Limiters ({@link MemoryLimiters}) keep their cells in the same map: a name is a counter or a
 * limiter because the map holds one {@link MemoryCell} under it. A counter operation that finds
 * a live limiter's cell is refused; one that finds a full limiter's drops it and goes on, and a
 * limiter does the same with an expired counter. No second look-up, and no window in which two
 * writers of different kinds each believe the name is free.
 *
 * <h2>Expiry</h2>
 *
 * An expired cell reads as missing and is replaced by the next write. So that memory does not
 * grow with keys nobody touches again, each insertion of a new key (counter or limiter) also
 * sweeps a couple of cells along a shared cursor, dropping expired counters and full limiters:
 * they are removed at least as fast as keys are created, with no background thread.
 */
final class MemoryStore implements Store {

  /** The value of a sealed cell; see the class comment. */
  static final long SEALED_BITS = Long.MIN_VALUE;

  private static final int LIVE = 0;
  private static final int SEALED = 1;
  private static final int SWEEP_PER_INSERT = 2;

  private final ConcurrentHashMap<String, MemoryCell> cells = new ConcurrentHashMap<>();
  private final OperationLog operations;
  private final TimeSource time;
  private final AtomicBoolean sweeping = new AtomicBoolean();
  private Iterator<Map.Entry<String, MemoryCell>> sweepCursor; // guarded by sweeping

  private final MemoryLimiters limiters;
  private final ConcurrentHashMap<String, ConcurrencyRecord> concurrencyStates = new ConcurrentHashMap<>();

  MemoryStore(TimeSource time, long operationRetentionNanos) {
    this.time = time;
    this.operations = new OperationLog(time, operationRetentionNanos);
    this.limiters = new MemoryLimiters(time, cells, this::sweepAfterInsert);
  }

  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return operations.applyOnce(this, id, mutation);
  }

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    return limiters.execute(call, operation, permits);
  }

  /**
   * Concurrency limits live in a map of their own, each step under the map's lock of its key
   * ({@link ConcurrentHashMap#compute}): the machine is short and allocation-light, and a name's
   * leases change far less often than a counter. Their names are apart from counters' and rate
   * limiters' on this store; records stay for good (the fencing counter must).
   */
  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    ConcurrencyResult[] result = new ConcurrencyResult[1];
    concurrencyStates.compute(call.key(), (k, stored) -> {
      ConcurrencyMachine.Outcome out = ConcurrencyMachine.apply(stored, time.nanos(), call);
      result[0] = out.result();
      return out.changed() ? out.next() : stored;
    });
    return result[0];
  }

  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    return limiters.executeAll(calls, permitsEach);
  }

  /** The limiter state, for tests of its sweeping. */
  MemoryLimiters limiters() {
    return limiters;
  }

  /** For a single bucket, a handle that keeps the bucket's cell: see {@link MemoryLimiters}. */
  @Override
  public LimiterShortcut shortcut(LimiterCall call) {
    return limiters.shortcut(call);
  }

  // ------------------------------------------------------------------ the cell

  static final class Cell implements MemoryCell {
    private static final VarHandle BITS;
    private static final VarHandle STATE;

    static {
      try {
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        BITS = lookup.findVarHandle(Cell.class, "bits", long.class);
        STATE = lookup.findVarHandle(Cell.class, "state", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    final boolean floating;
    /** Absolute expiry in {@link TimeSource} nanos; 0 for never. */
    final long expiresAt;
    /** A sealed stand-in for a missing key; never holds a value. */
    final boolean placeholder;

    volatile long bits;
    volatile int state;

    Cell(boolean floating, long bits, long expiresAt) {
      this.floating = floating;
      this.expiresAt = expiresAt;
      this.placeholder = false;
      this.bits = bits;
    }

    private Cell() {
      this.floating = false;
      this.expiresAt = 0;
      this.placeholder = true;
      this.bits = SEALED_BITS;
      this.state = SEALED;
    }

    static Cell placeholder() {
      return new Cell();
    }

    boolean expired(long now) {
      return expiresAt != 0 && now - expiresAt >= 0;
    }

    boolean casBits(long expected, long next) {
      return BITS.compareAndSet(this, expected, next);
    }

    /** Steps 1 and 2 of sealing; returns false if another writer holds the cell. */
    boolean seal() {
      return state == LIVE && STATE.compareAndSet(this, LIVE, SEALED);
    }

    long takeBits() {
      return (long) BITS.getAndSet(this, SEALED_BITS);
    }

    Number value(long bits) {
      return floating ? (Number) Double.longBitsToDouble(bits) : (Number) bits;
    }

    /**
     * Removes this cell from {@code cells} if it has expired and no writer holds it; returns
     * whether it did. A limiter that meets an expired counter under its name drops it this way,
     * as the sweeper does.
     */
    boolean removeIfExpired(Map<String, MemoryCell> cells, String key, long now) {
      if (expired(now) && seal()) {
        takeBits();
        return cells.remove(key, this);
      }
      return false;
    }

    /** Whether this is a counter's value now: not a placeholder, not being replaced, not expired. */
    boolean live(long now) {
      return !placeholder && state == LIVE && !expired(now);
    }
  }

  /** A locked key: the sealed cell (or placeholder) and the value it held when sealed. */
  private static final class Locked {
    final String key;
    final Cell cell;
    final boolean present;
    final boolean floating;
    final long bits;
    final long expiresAt;

    Locked(String key, Cell cell, boolean present, long bits) {
      this.key = key;
      this.cell = cell;
      this.present = present;
      this.floating = present && cell.floating;
      this.bits = bits;
      this.expiresAt = present ? cell.expiresAt : 0;
    }
  }

  // ------------------------------------------------------------------ counters

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    if (cells.get(key) instanceof Cell c && !c.floating && (c.expiresAt == 0 || !c.expired(time.nanos()))) {
      for (long v; (v = c.bits) != SEALED_BITS; ) {
        long n = CounterMath.add(key, v, delta);
        if (n == SEALED_BITS) {
          break;
        }
        if (c.casBits(v, n)) {
          return n;
        }
      }
    }
    Locked l = lock(key);
    long next;
    try {
      next = integerIncrement(key, l.present, l.floating, l.bits, delta, dflt, create);
    } catch (RuntimeException e) {
      unlock(l);
      throw e;
    }
    install(l, new Cell(false, next, l.present ? l.expiresAt : 0));
    return next;
  }

  /** The new value of an integer increment of a locked key; throws, changing nothing. */
  private static long integerIncrement(
      String key, boolean present, boolean floating, long current, long delta, long dflt, boolean create) {
    if (!present) {
      if (!create) {
        throw new KeyNotFoundException(key);
      }
      return CounterMath.add(key, dflt, delta);
    }
    if (floating) {
      throw new NotAnIntegerException(key);
    }
    return CounterMath.add(key, current, delta);
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    if (cells.get(key) instanceof Cell c && c.floating && (c.expiresAt == 0 || !c.expired(time.nanos()))) {
      for (long v; (v = c.bits) != SEALED_BITS; ) {
        double n = CounterMath.add(key, Double.longBitsToDouble(v), delta);
        long nb = Double.doubleToRawLongBits(n);
        if (nb == SEALED_BITS) {
          break;
        }
        if (c.casBits(v, nb)) {
          return n;
        }
      }
    }
    Locked l = lock(key);
    double next;
    try {
      next = CounterMath.add(key, l.present ? asDouble(l) : dflt, delta);
    } catch (RuntimeException e) {
      unlock(l);
      throw e;
    }
    install(l, new Cell(true, Double.doubleToRawLongBits(next), l.present ? l.expiresAt : 0));
    return next;
  }

  private static double asDouble(Locked l) {
    return l.floating ? Double.longBitsToDouble(l.bits) : (double) l.bits;
  }

  @Override
  public Number get(String key) {
    long now = time.nanos();
    for (int spins = 0; ; spins++) {
      MemoryCell m = cells.get(key);
      if (m == null) {
        return null;
      }
      if (m instanceof Cell c) {
        long bits = c.bits;
        if (bits != SEALED_BITS || c.state == LIVE) {
          return c.expired(now) ? null : c.value(bits);
        }
      } else {
        refuseLiveLimiter(key, m);
      }
      backoff(spins);
    }
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    Locked l = lock(key);
    install(l, newCell(value, expiry(ttlNanos)));
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    if (cells.get(key) instanceof Cell c && !c.placeholder && c.state == LIVE && !c.expired(time.nanos())) {
      return false; // linearizes here: the key was live
    }
    Locked l = lock(key);
    if (l.present) {
      unlock(l);
      return false;
    }
    install(l, newCell(value, expiry(ttlNanos)));
    return true;
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    if (cells.get(key) == null) {
      return null;
    }
    Locked l = lock(key);
    if (!l.present || (integerOnly && l.floating)) {
      unlock(l);
      if (l.present) {
        throw new NotAnIntegerException(key);
      }
      return null;
    }
    install(l, null);
    return l.cell.value(l.bits);
  }

  @Override
  public boolean delete(String key) {
    if (cells.get(key) == null) {
      return false;
    }
    Locked l = lock(key);
    install(l, null);
    return l.present;
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    if (cells.get(key) == null) {
      return false;
    }
    Locked l = lock(key);
    if (!l.present) {
      unlock(l);
      return false;
    }
    install(l, new Cell(l.floating, l.bits, expiry(ttlNanos)));
    return true;
  }

  @Override
  public long ttl(String key) {
    long now = time.nanos();
    for (int spins = 0; ; spins++) {
      MemoryCell m = cells.get(key);
      if (m == null) {
        return TTL_MISSING;
      }
      if (m instanceof Cell c) {
        if (c.state == LIVE || c.bits != SEALED_BITS) {
          if (c.expired(now)) {
            return TTL_MISSING;
          }
          return c.expiresAt == 0 ? TTL_PERMANENT : c.expiresAt - now;
        }
      } else {
        refuseLiveLimiter(key, m);
      }
      backoff(spins);
    }
  }

  @Override
  public List<String> keys(String prefix) {
    long now = time.nanos();
    List<String> keys = new ArrayList<>();
    cells.forEach((key, cell) -> {
      if (cell instanceof Cell c && !c.placeholder && !c.expired(now) && key.startsWith(prefix)) {
        keys.add(key);
      }
    });
    return keys;
  }

  @Override
  public Number[] transact(List<TxOp> ops) {
    TreeSet<String> sorted = new TreeSet<>();
    for (TxOp op : ops) {
      sorted.add(op.key());
    }
    Map<String, Locked> locked = new HashMap<>();
    try {
      for (String key : sorted) {
        locked.put(key, lock(key));
      }
    } catch (RuntimeException e) {
      locked.values().forEach(this::unlock);
      throw e;
    }
    // Working state per key: absent, or a cell that is not yet installed.
    Map<String, Cell> working = new HashMap<>();
    for (Locked l : locked.values()) {
      working.put(l.key, l.present ? new Cell(l.floating, l.bits, l.expiresAt) : null);
    }
    Number[] results = new Number[ops.size()];
    try {
      long now = time.nanos();
      for (int i = 0; i < results.length; i++) {
        results[i] = applyTo(working, ops.get(i), now);
      }
    } catch (RuntimeException e) {
      locked.values().forEach(this::unlock);
      throw e;
    }
    for (Locked l : locked.values()) {
      install(l, working.get(l.key));
    }
    return results;
  }

  private Number applyTo(Map<String, Cell> working, TxOp op, long now) {
    String key = op.key();
    Cell cur = working.get(key);
    if (op instanceof TxOp.Incr incr && incr.bounds() != null) {
      if (cur == null && !incr.create()) {
        throw new KeyNotFoundException(key);
      }
      if (cur != null && cur.floating) {
        throw new NotAnIntegerException(key);
      }
      long next = CounterMath.addWithin(key, cur == null ? incr.dflt() : cur.bits, incr.delta(), incr.bounds());
      working.put(key, new Cell(false, next, cur == null ? 0 : cur.expiresAt));
      return next;
    } else if (op instanceof TxOp.Incr incr) {
      long next = cur == null
          ? integerIncrement(key, false, false, 0, incr.delta(), incr.dflt(), incr.create())
          : integerIncrement(key, true, cur.floating, cur.bits, incr.delta(), incr.dflt(), incr.create());
      working.put(key, new Cell(false, next, cur == null ? 0 : cur.expiresAt));
      return next;
    } else if (op instanceof TxOp.IncrDouble incr) {
      double base = cur == null ? incr.dflt()
          : cur.floating ? Double.longBitsToDouble(cur.bits) : (double) cur.bits;
      double next = CounterMath.add(key, base, incr.delta());
      working.put(key, new Cell(true, Double.doubleToRawLongBits(next), cur == null ? 0 : cur.expiresAt));
      return next;
    } else if (op instanceof TxOp.Put put) {
      working.put(key, newCell(put.value(), expiry(put.ttlNanos(), now)));
      return put.value();
    } else if (op instanceof TxOp.Delete) {
      working.put(key, null);
      return cur == null ? 0L : 1L;
    } else if (op instanceof TxOp.Get) {
      return cur == null ? null : cur.value(cur.bits);
    }
    throw new IllegalArgumentException("unknown transaction operation " + op);
  }

  /**
   * A counter operation met a limiter's cell: refused while the limiter is live, since even a
   * read answering "missing" would tell the caller the name is free. A full limiter's cell is
   * dropped (the name is free again) and the caller looks again.
   */
  private void refuseLiveLimiter(String key, MemoryCell limiter) {
    if (limiters.liveAfterDroppingFull(key, limiter)) {
      throw new WrongKindException(key, WrongKindException.Kind.LIMITER);
    }
  }

  // ------------------------------------------------------------------ locking by sealing

  /**
   * Seals the key's cell, or inserts a sealed placeholder if it has none, and returns what it
   * held. The caller must end with {@link #install} or {@link #unlock}.
   */
  private Locked lock(String key) {
    long now = time.nanos();
    for (int spins = 0; ; spins++) {
      MemoryCell m = cells.get(key);
      if (m == null) {
        Cell placeholder = Cell.placeholder();
        if (cells.putIfAbsent(key, placeholder) == null) {
          sweepAfterInsert(placeholder);
          return new Locked(key, placeholder, false, 0);
        }
      } else if (!(m instanceof Cell c)) {
        refuseLiveLimiter(key, m);
        backoff(spins);
      } else if (c.seal()) {
        long bits = c.takeBits();
        return c.expired(now) ? new Locked(key, c, false, 0) : new Locked(key, c, true, bits);
      } else {
        backoff(spins);
      }
    }
  }

  /** Replaces a locked cell with {@code next}, or removes the key if {@code next} is null. */
  private void install(Locked l, Cell next) {
    boolean replaced = next == null ? cells.remove(l.key, l.cell) : cells.replace(l.key, l.cell, next);
    assert replaced : "a sealed cell was replaced by someone other than its sealer";
  }

  /** Releases a lock without a change: the same value in a fresh cell, or nothing if absent. */
  private void unlock(Locked l) {
    install(l, l.present ? new Cell(l.floating, l.bits, l.expiresAt) : null);
  }

  /** Waits a little for another writer to finish with a cell: spins, then yields, then parks. */
  static void backoff(int spins) {
    if (spins < 64) {
      Thread.onSpinWait();
    } else if (spins < 128) {
      Thread.yield();
    } else {
      LockSupport.parkNanos(1_000);
    }
  }

  private Cell newCell(Number value, long expiresAt) {
    return value instanceof Double
        ? new Cell(true, Double.doubleToRawLongBits(value.doubleValue()), expiresAt)
        : new Cell(false, value.longValue(), expiresAt);
  }

  private long expiry(long ttlNanos) {
    return ttlNanos == NO_TTL ? 0 : expiry(ttlNanos, time.nanos());
  }

  private static long expiry(long ttlNanos, long now) {
    if (ttlNanos == NO_TTL) {
      return 0;
    }
    long at = now + ttlNanos;
    return at == 0 ? 1 : at; // 0 means "never"
  }

  // ------------------------------------------------------------------ sweeping

  /**
   * Paid by each insertion of a new key: removes expired counters and full limiters among the
   * next {@value #SWEEP_PER_INSERT} cells along the shared cursor, except {@code inserted}, the
   * cell just put in, which is in use right now (a limiter that refills a unit every nanosecond
   * would be full again already, and removing it would make it store anew on every call). It is
   * swept when the cursor next passes it.
   */
  void sweepAfterInsert(MemoryCell inserted) {
    if (!sweeping.compareAndSet(false, true)) {
      return; // someone else is sweeping; they will cover this ground
    }
    try {
      long now = time.nanos();
      for (int i = 0; i < SWEEP_PER_INSERT; i++) {
        if (sweepCursor == null || !sweepCursor.hasNext()) {
          sweepCursor = cells.entrySet().iterator();
          if (!sweepCursor.hasNext()) {
            return;
          }
        }
        Map.Entry<String, MemoryCell> e = sweepCursor.next();
        if (e.getValue() != inserted) {
          removeIfLapsed(e.getKey(), e.getValue(), now);
        }
      }
    } finally {
      sweeping.set(false);
    }
  }

  /** Turns the sweep of {@link #sweepAfterInsert} off for good: it finds a sweep always under way. */
  void stopSweeping() {
    sweeping.set(true);
  }

  /** Removes an expired counter or a full limiter; returns whether it did. */
  private boolean removeIfLapsed(String key, MemoryCell m, long now) {
    return m instanceof Cell c ? c.removeIfExpired(cells, key, now) : limiters.removeIfFull(key, m, now);
  }

  /**
   * Removes every expired counter and full limiter now; returns how many. For tests and explicit
   * maintenance.
   */
  int sweep() {
    long now = time.nanos();
    int removed = 0;
    for (Map.Entry<String, MemoryCell> e : cells.entrySet()) {
      if (removeIfLapsed(e.getKey(), e.getValue(), now)) {
        removed++;
      }
    }
    return removed;
  }

  /** How many cells the map holds, of either kind, expired or not. For tests. */
  int size() {
    return cells.size();
  }

  @Override
  public boolean blocking() {
    return false;
  }

  @Override
  public void close() {
    cells.clear();
  }

  @Override
  public String toString() {
    return "MemoryStore" + Arrays.asList(cells.size() + " cells");
  }
}
