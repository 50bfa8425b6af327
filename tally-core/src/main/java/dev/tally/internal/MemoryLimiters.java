package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.TimeSource;
import dev.tally.WrongKindException;
import dev.tally.spi.JointLimit;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterShortcut;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * Rate limiter state for the {@code mem:} store.
 *
 * <h2>Two kinds of cell</h2>
 *
 * Most limiters are a single bucket (token, leaky or GCRA), whose whole state is one instant
 * ({@link Gcra}). Those live in a {@link BucketCell}: the bucket's parameters in final fields
 * and {@code fullAt} in one word changed by compare-and-swap. A decision is then a read of the
 * clock, a little arithmetic and one CAS: no lock, no allocation, and contention costs a retry
 * rather than a context switch. Everything else (several limits, windows, quotas) lives in a
 * {@link RecordCell}: the state machine's {@code long[]} record under the cell's monitor, also
 * allocation-free once the cell exists.
 *
 * <h2>Replacing a bucket cell</h2>
 *
 * A bucket cell's parameters are final, so reconfiguring, resetting or sweeping one replaces
 * it. As in {@link MemoryStore}, the writer first seals the old cell by swapping {@code fullAt}
 * to {@link #SEALED} (a value no instant takes), which both captures its final state and makes
 * every later CAS on it fail; callers that meet a sealed cell look the key up again. No grant is
 * ever made on a cell that is no longer the key's.
 *
 * <h2>One map with the counters</h2>
 *
 * The cells live in the {@link MemoryStore}'s map, beside counters' cells ({@link MemoryCell}):
 * a limiter step that finds a live counter under its name is refused, one that finds an expired
 * counter drops it first.
 *
 * <h2>Expiry</h2>
 *
 * A bucket whose {@code fullAt} has passed is full, which is the same as having no state; a
 * record cell knows when it will be. Each new cell pays for the store's sweep of two others
 * along a shared cursor, which removes full limiters and expired counters, so memory tracks the
 * names in use.
 */
final class MemoryLimiters {
  static final long SEALED = Long.MIN_VALUE;

  private final ConcurrentHashMap<String, MemoryCell> cells;
  private final TimeSource time;
  private final Consumer<MemoryCell> sweepAfterInsert;

  /**
   * @param cells the store's one map of counters' and limiters' cells
   * @param sweepAfterInsert the store's sweep, paid by each new cell
   */
  MemoryLimiters(TimeSource time, ConcurrentHashMap<String, MemoryCell> cells,
      Consumer<MemoryCell> sweepAfterInsert) {
    this.time = time;
    this.cells = cells;
    this.sweepAfterInsert = sweepAfterInsert;
  }

  /**
   * Whether a limiter's {@code cell}, which a counter operation found under {@code key}, is
   * live: true if it is not full. A full limiter's cell is dropped, as the sweeper would drop
   * it, and the answer is false; false too if the cell is being replaced or dropped by another
   * thread: the caller looks again. Otherwise a handle of that limiter would go on using the
   * cell, and the name would be a counter and a limiter at once.
   */
  boolean liveAfterDroppingFull(String key, MemoryCell cell) {
    long now = time.nanos();
    if (removeIfFull(key, cell, now)) {
      return false;
    }
    if (cell instanceof BucketCell b) {
      long f = b.fullAt;
      return f != SEALED && f > now; // full but changed under the sweep, or sealed: look again
    }
    RecordCell rc = (RecordCell) cell;
    synchronized (rc) {
      return !rc.removed; // not full: removeIfFull would have dropped it
    }
  }

  /**
   * A single bucket: its parameters, and {@code fullAt} changed by CAS.
   *
   * <p>{@code decidedAt} is the latest instant a decision on the cell was taken at, so that a
   * caller whose clock reading is older decides at that instant instead (see
   * {@link LimiterRecord}: time never runs back). It is raised <em>before</em> the CAS on
   * {@code fullAt} that publishes the decision, and read <em>after</em> reading {@code fullAt}:
   * both are volatile, so a caller that sees a decision's {@code fullAt} also sees its instant.
   */
  static final class BucketCell implements MemoryCell {
    private static final VarHandle FULL_AT;
    private static final VarHandle DECIDED_AT;

    static {
      try {
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        FULL_AT = lookup.findVarHandle(BucketCell.class, "fullAt", long.class);
        DECIDED_AT = lookup.findVarHandle(BucketCell.class, "decidedAt", long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    final long tag; // the record's tag word: the bucket's kind and its limits' version
    final long capacity;
    final long interval;
    final long span;
    volatile long fullAt;
    volatile long decidedAt;

    BucketCell(long tag, long capacity, long interval, long fullAt, long decidedAt) {
      this.tag = tag;
      this.capacity = capacity;
      this.interval = interval;
      this.span = capacity * interval;
      this.fullAt = fullAt;
      this.decidedAt = decidedAt;
    }

    /**
     * The instant to decide at: {@code now}, or the latest instant already decided at if that is
     * later; raises {@code decidedAt} to it. Call after reading {@code fullAt}, before the CAS.
     */
    long decideAt(long now) {
      for (long d; now > (d = decidedAt); ) {
        if (DECIDED_AT.compareAndSet(this, d, now)) {
          return now;
        }
      }
      return decidedAt;
    }

    boolean cas(long expected, long next) {
      return FULL_AT.compareAndSet(this, expected, next);
    }

    /** Seals the cell if {@code fullAt} is still {@code expected}. */
    boolean seal(long expected) {
      return expected != SEALED && cas(expected, SEALED);
    }

    long[] record(long fullAt) {
      long[] r = new long[Algorithm.WIDTH];
      r[Algorithm.TAG] = tag;
      r[Algorithm.P0] = capacity;
      r[Algorithm.P1] = interval;
      r[Algorithm.S0] = fullAt;
      return r;
    }
  }

  static final class RecordCell implements MemoryCell {
    long[] record; // guarded by this
    long decidedAt = Long.MIN_VALUE; // guarded by this
    long expiresAt; // guarded by this
    boolean removed; // guarded by this
  }

  /**
   * The allocation-free path of {@code tryAcquire}: a single-bucket limiter whose cell is
   * {@code hint} (the one the handle saw last). Returns -1 if it must take the general path.
   *
   * <p>The clock is read once, before the loop, as {@link #execute} does: a retry after a lost
   * CAS decides at the same {@code now} against the new {@code fullAt}. That is the decision
   * the request would have had at {@code now}, after the grant that beat it, and never a more
   * generous one: that grant's {@code fullAt} already counts any later time it was made at.
   * Reading the clock again would cost as much as the rest of the path and widen the window in
   * which the next CAS can lose.
   */
  int tryAcquireFast(BucketCell cell, long permits) {
    long clock = time.nanos();
    for (long f; (f = cell.fullAt) != SEALED; ) {
      long now = cell.decideAt(clock);
      if (permits > cell.capacity) {
        return 0;
      }
      long next = Math.max(f, now) + permits * cell.interval;
      if (next - now > cell.span) {
        return 0;
      }
      if (cell.cas(f, next)) {
        return 1;
      }
    }
    return -1;
  }

  /**
   * The allocation-free acquire of a single-bucket limiter (token, leaky or GCRA), or null for
   * any other: it tries the cell it saw last, and takes the general path (and remembers the cell
   * that path leaves) when that cell is gone or sealed.
   */
  LimiterShortcut shortcut(LimiterCall call) {
    List<Limit> limits = call.limits();
    if (limits.size() != 1 || Algorithm.of(limits.get(0)) != Gcra.INSTANCE) {
      return null;
    }
    String key = call.key();
    return new LimiterShortcut() {
      private volatile BucketCell hint;

      @Override
      public boolean tryAcquire(long permits) {
        BucketCell cell = hint;
        if (cell != null) {
          int granted = tryAcquireFast(cell, permits);
          if (granted >= 0) {
            return granted == 1;
          }
        }
        Decision d = execute(call, LimiterOperation.ACQUIRE, permits);
        if (d.mismatch() != Decision.Mismatch.NONE && call instanceof LimiterMachine m) {
          m.report(d); // the handle sees only the boolean
        }
        BucketCell next = bucketCell(key);
        hint = next != null && holds(next, call) ? next : null;
        return d.allowed();
      }
    };
  }

  /**
   * Whether {@code b} holds {@code call}'s limits, at its version or a newer one: only then do
   * the bucket's own paths decide for it (as the machine would: nothing to replace or report);
   * otherwise the machine decides whose limits apply.
   */
  private static boolean holds(BucketCell b, LimiterCall call) {
    List<Limit> limits = call.limits();
    if (limits.size() != 1) {
      return false;
    }
    Limit l = limits.get(0);
    return (b.tag & Algorithm.KIND_MASK) == LimiterRecord.limitTag(l) && b.tag >>> LimiterRecord.VERSION_SHIFT >= call.version()
        && b.capacity == l.limit() && b.interval == l.intervalNanos();
  }

  /** The bucket cell now stored for {@code key}, or null. */
  BucketCell bucketCell(String key) {
    return cells.get(key) instanceof BucketCell b ? b : null;
  }

  /** Runs the machine atomically on the key's state. */
  Decision execute(LimiterCall machine, LimiterOperation op, long permits) {
    String key = machine.key();
    for (int spins = 0; ; spins++) {
      long now = time.nanos();
      MemoryCell c = cells.get(key);
      if (c == null) {
        LimiterOutcome out = machine.apply(null, now, op, permits);
        if (out.record() == null) {
          return out.decision();
        }
        MemoryCell fresh = newCell(out, now);
        if (cells.putIfAbsent(key, fresh) == null) {
          sweepAfterInsert.accept(fresh);
          return out.decision();
        }
      } else if (c instanceof MemoryStore.Cell counter) {
        // A counter's name: refused for every operation, even one that would write nothing (a
        // peek, a reset), so that no answer says the name is a limiter's. An expired counter is
        // dropped; one being written is waited for (within instructions).
        if (counter.live(now)) {
          throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
        }
        if (!counter.removeIfExpired(cells, key, now)) {
          MemoryStore.backoff(spins);
        }
      } else if (c instanceof BucketCell b) {
        Decision d = onBucket(key, b, machine, op, permits, now);
        if (d != null) {
          return d;
        }
      } else {
        RecordCell rc = (RecordCell) c;
        synchronized (rc) {
          if (!rc.removed) {
            // A copy: the machine works on the words in place, and one that throws (a top-up
            // with no quota) must leave the state as it was.
            long[] words = rc.expiresAt - now <= 0 ? new long[0] : rc.record.clone();
            LimiterOutcome out = machine.apply(new LimiterRecord(rc.decidedAt, words), now, op, permits);
            if (out.record() == null) {
              rc.removed = true;
              cells.remove(key, rc);
            } else {
              rc.record = out.record();
              rc.decidedAt = out.decidedAt();
              rc.expiresAt = now + out.keepNanos();
            }
            return out.decision();
          }
        }
      }
    }
  }

  /**
   * {@link JointLimit} on several keys as one step. Each key's cell is taken over in key order, so
   * two joint decisions on overlapping keys (and a counter transaction, which seals in the same
   * order) cannot deadlock: a record cell under its monitor; a bucket cell sealed and replaced by a
   * record cell of the same state, whose monitor this thread holds before publishing it; a missing
   * key by such a cell, empty. Every call is then decided at one reading of the clock, and only if
   * all allow is each cell replaced by its outcome's (a bucket cell again, where it is one). Another
   * caller of one of the keys meanwhile waits on the monitor, or meets a sealed cell and looks again.
   */
  Decision[] executeAll(List<LimiterCall> calls, long permitsEach) {
    Integer[] order = new Integer[calls.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparing(i -> calls.get(i).key()));
    RecordCell[] held = new RecordCell[order.length];
    List<MemoryCell> inserted = new ArrayList<>();
    Decision[] decisions = lockFrom(0, order, calls, held, permitsEach, inserted);
    for (MemoryCell c : inserted) {
      sweepAfterInsert.accept(c); // after every monitor is released: the sweep takes others'
    }
    return decisions;
  }

  /** Holds the cells of {@code order[k..]}, then decides; see {@link #executeAll}. */
  private Decision[] lockFrom(int k, Integer[] order, List<LimiterCall> calls, RecordCell[] held, long permits,
      List<MemoryCell> inserted) {
    if (k == order.length) {
      return decideHeld(calls, held, permits, inserted);
    }
    int i = order[k];
    String key = calls.get(i).key();
    for (int spins = 0; ; spins++) {
      long now = time.nanos();
      MemoryCell c = cells.get(key);
      if (c instanceof MemoryStore.Cell counter) {
        if (counter.live(now)) {
          throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
        }
        if (!counter.removeIfExpired(cells, key, now)) {
          MemoryStore.backoff(spins);
        }
        continue;
      }
      RecordCell rc;
      BucketCell bucket = null;
      long fullAt = 0;
      if (c == null) {
        rc = new RecordCell();
        rc.record = new long[0];
        rc.expiresAt = now;
      } else if (c instanceof BucketCell b) {
        bucket = b;
        fullAt = b.fullAt;
        if (fullAt == SEALED) {
          MemoryStore.backoff(spins);
          continue;
        }
        rc = new RecordCell();
        rc.record = b.record(fullAt);
        rc.expiresAt = fullAt;
      } else {
        rc = (RecordCell) c;
      }
      synchronized (rc) {
        boolean ours;
        if (c == null) {
          ours = cells.putIfAbsent(key, rc) == null;
        } else if (bucket != null) {
          ours = bucket.seal(fullAt);
          if (ours) {
            rc.decidedAt = bucket.decidedAt; // read after sealing: no decision can raise it now
            cells.replace(key, bucket, rc);
          }
        } else {
          ours = !rc.removed;
        }
        if (ours) {
          held[i] = rc;
          try {
            return lockFrom(k + 1, order, calls, held, permits, inserted);
          } finally {
            if (!rc.removed && c == null) {
              rc.removed = true; // an empty cell this call added and did not replace: drop it
              cells.remove(key, rc);
            }
          }
        }
      }
    }
  }

  /** Decides every call on the held cells; replaces them with the outcomes' only if all allow. */
  private Decision[] decideHeld(List<LimiterCall> calls, RecordCell[] held, long permits,
      List<MemoryCell> inserted) {
    long now = time.nanos();
    LimiterRecord[] stored = new LimiterRecord[held.length];
    for (int i = 0; i < held.length; i++) {
      RecordCell rc = held[i];
      if (rc.decidedAt != Long.MIN_VALUE || rc.record.length > 0) {
        stored[i] = new LimiterRecord(rc.decidedAt, rc.expiresAt - now <= 0 ? new long[0] : rc.record);
      }
    }
    JointLimit.Result result = JointLimit.decide(calls, stored, now, permits);
    if (result.allowed()) {
      for (int i = 0; i < held.length; i++) {
        RecordCell rc = held[i];
        LimiterOutcome out = result.outcomes()[i];
        String key = calls.get(i).key();
        rc.removed = true;
        if (out.record() == null) {
          cells.remove(key, rc);
        } else {
          MemoryCell next = newCell(out, now);
          cells.replace(key, rc, next);
          inserted.add(next);
        }
      }
    }
    return result.decisions();
  }

  /**
   * An operation on a bucket cell: acquire, peek and refund by CAS on the cell; anything that
   * changes its parameters seals and replaces it. Returns null if the cell was sealed meanwhile.
   */
  private Decision onBucket(String key, BucketCell b, LimiterCall machine, LimiterOperation op,
      long permits, long clock) {
    for (long f; (f = b.fullAt) != SEALED; ) {
      long now = b.decideAt(clock);
      if ((op == LimiterOperation.ACQUIRE || op == LimiterOperation.PEEK
          || op == LimiterOperation.REFUND || op == LimiterOperation.CHARGE) && holds(b, machine)) {
        long next = f;
        boolean allowed = true;
        long retryAfter = 0;
        long n = op == LimiterOperation.PEEK ? 1 : permits;
        if (op == LimiterOperation.REFUND) {
          next = Math.max(now, f - Math.min(permits, 2 * b.capacity) * b.interval); // Gcra.refund
        } else if (op == LimiterOperation.CHARGE) { // Gcra.debtRoom, as the machine charges
          long c = permits <= 0 ? 0 : Math.min(permits, Gcra.debtRoom(b.capacity, b.interval, f, now));
          if (c > 0) {
            next = Math.max(f, now) + c * b.interval;
          }
        } else if (op == LimiterOperation.PEEK || permits > 0) {
          retryAfter = Gcra.retryAfter(b.capacity, b.interval, f, now, n);
          allowed = retryAfter == 0;
          if (allowed && op == LimiterOperation.ACQUIRE) {
            next = Math.max(f, now) + permits * b.interval;
          }
        }
        if (next == f || b.cas(f, next)) {
          return new Decision(allowed, Gcra.remaining(b.capacity, b.interval, next, now), b.capacity,
              retryAfter, Math.max(0, next - now));
        }
        continue;
      }
      // Decided before sealing: the machine is pure, and one that refuses (a top-up with no quota
      // to top up) must leave the cell as it was, not sealed with nothing to replace it.
      // A full bucket is a state past its expiry, as every other store sees it: only its instant
      // is left, so a caller of other limits starts afresh on its own rather than adopting these.
      LimiterOutcome out = machine.apply(f - now <= 0 ? LimiterRecord.tombstone(now) : new LimiterRecord(now, b.record(f)),
          now, op, permits);
      if (b.seal(f)) {
        if (out.record() == null) {
          cells.remove(key, b);
        } else {
          cells.replace(key, b, newCell(out, now));
        }
        return out.decision();
      }
    }
    return null;
  }

  private static MemoryCell newCell(LimiterOutcome out, long now) {
    long[] r = out.record();
    // A full bucket kept for its limits' sake (not the caller's: LimiterMachine) needs an expiry
    // of its own, which only a record cell has: a bucket cell is dropped once full.
    if (r.length == Algorithm.WIDTH && Algorithm.ofTag(r[Algorithm.TAG]) == Gcra.INSTANCE
        && out.decision().resetAfterNanos() > 0) {
      return new BucketCell(r[Algorithm.TAG], r[Algorithm.P0], r[Algorithm.P1], r[Algorithm.S0], out.decidedAt());
    }
    RecordCell rc = new RecordCell();
    rc.record = r;
    rc.decidedAt = out.decidedAt();
    rc.expiresAt = now + out.keepNanos();
    return rc;
  }

  /** Removes a limiter's cell if it is full; returns whether it did. */
  boolean removeIfFull(String key, MemoryCell c, long now) {
    if (c instanceof BucketCell b) {
      long f = b.fullAt;
      return f != SEALED && f <= now && b.seal(f) && cells.remove(key, b);
    }
    if (c instanceof RecordCell rc) {
      synchronized (rc) {
        if (!rc.removed && rc.expiresAt - now <= 0) {
          rc.removed = true;
          return cells.remove(key, rc);
        }
      }
    }
    return false;
  }

  /**
   * The state under {@code key} as its cell holds it, full or not: its decision instant, its
   * expiry (a bucket's: when it is full again), then its words; null if no limiter's cell is
   * there. For the kit's limiter vectors, which compare it with the machine's.
   */
  long[] state(String key) {
    MemoryCell c = cells.get(key);
    long[] words;
    long[] head = new long[2];
    if (c instanceof BucketCell b) {
      long f = b.fullAt;
      if (f == SEALED) {
        return null;
      }
      head[0] = b.decidedAt;
      head[1] = f;
      words = b.record(f);
    } else if (c instanceof RecordCell rc) {
      synchronized (rc) {
        if (rc.removed) {
          return null;
        }
        head[0] = rc.decidedAt;
        head[1] = rc.expiresAt;
        words = rc.record;
      }
    } else {
      return null;
    }
    long[] r = Arrays.copyOf(head, 2 + words.length);
    System.arraycopy(words, 0, r, 2, words.length);
    return r;
  }

  /** Removes every full limiter now; returns how many. For tests. */
  int sweep() {
    long now = time.nanos();
    int removed = 0;
    for (Map.Entry<String, MemoryCell> e : cells.entrySet()) {
      if (!(e.getValue() instanceof MemoryStore.Cell) && removeIfFull(e.getKey(), e.getValue(), now)) {
        removed++;
      }
    }
    return removed;
  }

  /** How many limiters' cells the store's map holds, full or not. For tests. */
  int size() {
    int n = 0;
    for (MemoryCell c : cells.values()) {
      if (!(c instanceof MemoryStore.Cell)) {
        n++;
      }
    }
    return n;
  }
}
