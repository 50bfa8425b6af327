package dev.tally.local;

import static dev.tally.local.Layout.FLOATING;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.SLOTS_PER_PAGE;
import static dev.tally.local.Layout.S_EXPIRY;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;

import dev.tally.Decision;
import dev.tally.KeyNotFoundException;
import dev.tally.StoreException;
import dev.tally.TimeSource;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.CounterMath;
import dev.tally.spi.JointLimit;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code file:} store: counters and rate limiters in a memory-mapped table shared by every
 * process on the host that opens the same file. See {@link Table} for the table, why its
 * lock-free increment is exact and how limiters' slots hold their state, {@link Locks} and
 * {@link Journal} for what happens when a process dies, {@link StoreFile} for the file as a
 * whole, and {@code docs/local-store.md} for the format.
 *
 * <p>Hot paths ({@code incr} of a live counter, {@code get}, {@code ttl}) take no lock: a
 * per-instance cache maps key strings to the slot, mask and expiry they were last validated with
 * and the value word last seen there, so a cached increment is one compare-and-swap on the mapped
 * file, or, if another thread or process moved the word since, three loads and another one.
 * Everything else locks the key's slot through an {@link Op}.
 *
 * <p>Each locked operation has a body that runs inside a given {@link Op} ({@code incrLocked},
 * {@code transactLocked}, {@code limitLocked}, ...), so that {@link OperationIds} can run one
 * inside the same {@link Op} as its operation id's record: see {@link #applyOnce}.
 */
final class LocalStore implements Store {
  private static final int CACHE_LIMIT = 1 << 17;
  /**
   * The {@link LimiterRecord#VERSION} of the state records in a file of format
   * {@link Layout#VERSION}: the file's format number is the records' version, so a Tally whose
   * records differ writes another format, which this one refuses to open, and a tally-core whose
   * records differ from this file store's is refused by {@link LimiterRecord#read}.
   */
  static final int RECORD_VERSION = 1;
  private static final int MAX_READ_ROUNDS = 4;

  private final LocalOptions options;
  private final TimeSource time;
  private final StoreFile file;
  private final FileMap map;
  private final Table table;
  private final ConcurrentHashMap<String, Table.Ref> refs = new ConcurrentHashMap<>();
  private final Maintenance maintenance;
  private final OperationIds operationIds;
  private final LocalConcurrency concurrency;
  private volatile boolean closed;

  LocalStore(LocalOptions options, TimeSource time) {
    this(options, time, OperationId.DEFAULT_RETENTION.toNanos());
  }

  /** A store that remembers operation ids for {@code retentionNanos} of {@code time}. */
  LocalStore(LocalOptions options, TimeSource time, long retentionNanos) {
    this.options = options;
    this.time = time;
    this.file = StoreFile.acquire(options);
    this.map = file.map;
    this.table = file.table;
    this.operationIds = new OperationIds(this, table, retentionNanos);
    this.concurrency = new LocalConcurrency(this, table, time, file.path());
    this.maintenance = new Maintenance(this, file, time, options.sync());
    maintenance.start();
  }

  StoreFile file() {
    return file;
  }

  LocalOptions options() {
    return options;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("this Tally file store (" + file.path() + ") is closed");
    }
  }

  Op begin() {
    return new Op(table, file.journal.borrow(), time, options.sync());
  }

  /** Commits {@code op} and updates this instance's cache for the counters it wrote. */
  void commit(Op op) {
    op.commit();
    for (Table.Held h : op.held) {
      if (h.key == null || h.key.operationId) {
        continue; // swept, or an operation id: never looked up through the cache
      }
      if (h.changed ? h.nowPresent && h.nowRecord : h.record) {
        refs.remove(h.key.string); // a rate limiter's slot: the cache is for counters
      } else {
        remember(h.key.string, h);
      }
    }
  }

  private void wrote(long slot) {
    if (options.sync() == LocalOptions.Sync.ALWAYS) {
      map.force(slot, SLOT);
    } else {
      file.dirty = true;
    }
  }

  private void remember(String key, Table.Held h) {
    if (h.finalLive) {
      if (refs.size() >= CACHE_LIMIT) {
        refs.clear();
      }
      refs.put(key, new Table.Ref(h.slot, h.finalMask, LIVE | (h.liveFloating() ? FLOATING : 0),
          h.liveExpiresAt(), h.liveBits() ^ h.finalMask));
    } else {
      refs.remove(key);
    }
  }

  /** The validated slot of a live key, from the cache or a lookup; null if missing. */
  private Table.Ref ref(String key, Key[] k) {
    Table.Ref ref = refs.get(key);
    if (ref != null) {
      return ref;
    }
    if (k[0] == null) {
      k[0] = new Key(key);
    }
    ref = table.find(k[0]);
    if (ref != null && Table.state(ref.meta()) == LIVE) {
      if (refs.size() >= CACHE_LIMIT) {
        refs.clear();
      }
      refs.put(key, ref);
    }
    return ref;
  }

  // ---------------------------------------------------------------- increments

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    checkOpen();
    Key[] k = new Key[1];
    for (Table.Ref ref; (ref = ref(key, k)) != null && !ref.floating(); ) {
      long slot = ref.slot();
      long guess = ref.raw;
      long kept = ref.expiresAt();
      if (guess != SEALED && (kept == 0 || !Table.expired(kept, time.nanos()))) {
        // The short way (Table, "The value word"): from the word last seen; an overflow, or a
        // sum that would read as sealed, is left to the long way, which reads the real value.
        long v = guess ^ ref.mask();
        long n = v + delta;
        long nr = n ^ ref.mask();
        if (((v ^ n) & (delta ^ n)) >= 0 && nr != SEALED && map.casLong(slot + S_RAW, guess, nr)) {
          ref.raw = nr;
          wrote(slot);
          return n;
        }
      }
      long expiresAt = map.getLongVolatile(slot + S_EXPIRY);
      long r = map.getLongVolatile(slot + S_RAW);
      long mask = map.getLongVolatile(slot + S_MASK);
      if (mask != ref.mask()) {
        refs.remove(key, ref);
        continue; // another incarnation: look again
      }
      if (r == SEALED || (expiresAt != 0 && Table.expired(expiresAt, time.nanos()))) {
        break; // locked, gone or expired: the locked way
      }
      long v = r ^ mask;
      long n = CounterMath.add(key, v, delta);
      long nr = n ^ mask;
      if (nr == SEALED) {
        break;
      }
      if (map.casLong(slot + S_RAW, r, nr)) {
        ref.raw = nr;
        wrote(slot);
        return n;
      }
    }
    try (Op op = begin()) {
      long next = incrLocked(op, k[0] != null ? k[0] : new Key(key), delta, dflt, create);
      commit(op);
      return next;
    }
  }

  long incrLocked(Op op, Key key, long delta, long dflt, boolean create) {
    Table.Held h = op.lockCounter(key, create);
    if (h == null || (!h.present && !create)) {
      throw new KeyNotFoundException(key.string);
    }
    long next;
    if (!h.present) {
      next = CounterMath.add(key.string, dflt, delta);
      h.set(false, next, 0);
    } else {
      if (h.floating) {
        throw CounterMath.notAnInteger(key.string);
      }
      next = CounterMath.add(key.string, h.bits, delta);
      h.set(false, next, h.expiresAt);
    }
    return next;
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    checkOpen();
    Key[] k = new Key[1];
    for (Table.Ref ref; (ref = ref(key, k)) != null && ref.floating(); ) {
      long slot = ref.slot();
      long expiresAt = map.getLongVolatile(slot + S_EXPIRY);
      long r = map.getLongVolatile(slot + S_RAW);
      long mask = map.getLongVolatile(slot + S_MASK);
      if (mask != ref.mask()) {
        refs.remove(key, ref);
        continue;
      }
      if (r == SEALED || (expiresAt != 0 && Table.expired(expiresAt, time.nanos()))) {
        break;
      }
      double n = CounterMath.add(key, Double.longBitsToDouble(r ^ mask), delta);
      long nr = Double.doubleToRawLongBits(n) ^ mask;
      if (nr == SEALED) {
        break;
      }
      if (map.casLong(slot + S_RAW, r, nr)) {
        wrote(slot);
        return n;
      }
    }
    try (Op op = begin()) {
      double next = incrDoubleLocked(op, k[0] != null ? k[0] : new Key(key), delta, dflt);
      commit(op);
      return next;
    }
  }

  double incrDoubleLocked(Op op, Key key, double delta, double dflt) {
    Table.Held h = op.lockCounter(key, true);
    double next;
    if (!h.present) {
      next = CounterMath.add(key.string, dflt, delta);
      h.set(true, Double.doubleToRawLongBits(next), 0);
    } else {
      double base = h.floating ? Double.longBitsToDouble(h.bits) : (double) h.bits;
      next = CounterMath.add(key.string, base, delta);
      h.set(true, Double.doubleToRawLongBits(next), h.expiresAt);
    }
    return next;
  }

  // ---------------------------------------------------------------- reads

  @Override
  public Number get(String key) {
    checkOpen();
    Key[] k = new Key[1];
    for (int round = 0; round < MAX_READ_ROUNDS; round++) {
      Table.Ref ref = ref(key, k);
      if (ref == null) {
        return null;
      }
      long slot = ref.slot();
      long expiresAt = map.getLongVolatile(slot + S_EXPIRY);
      long r = map.getLongVolatile(slot + S_RAW);
      long mask = map.getLongVolatile(slot + S_MASK);
      if (mask != ref.mask() || r == SEALED) {
        refs.remove(key, ref);
        if (r == SEALED) {
          if (Table.record(map.getLongVolatile(slot + S_META))) {
            break; // a rate limiter's slot, sealed for good: the locked path says what it is
          }
          table.locks.awaitUnlocked(slot);
        }
        continue;
      }
      if (Table.expired(expiresAt, time.nanos())) {
        return null;
      }
      long bits = r ^ mask;
      return ref.floating() ? (Number) Double.longBitsToDouble(bits) : (Number) bits;
    }
    try (Op op = begin()) { // kept meeting locked slots: read under the lock
      Table.Held h = op.lockCounter(k[0] != null ? k[0] : new Key(key), false);
      return h == null || !h.present ? null : h.value();
    }
  }

  @Override
  public long ttl(String key) {
    checkOpen();
    Key[] k = new Key[1];
    for (int round = 0; round < MAX_READ_ROUNDS; round++) {
      Table.Ref ref = ref(key, k);
      if (ref == null) {
        return TTL_MISSING;
      }
      long slot = ref.slot();
      long expiresAt = map.getLongVolatile(slot + S_EXPIRY);
      long r = map.getLongVolatile(slot + S_RAW);
      long mask = map.getLongVolatile(slot + S_MASK);
      if (mask != ref.mask() || r == SEALED) {
        refs.remove(key, ref);
        if (r == SEALED) {
          if (Table.record(map.getLongVolatile(slot + S_META))) {
            break; // a rate limiter's slot, sealed for good: the locked path says what it is
          }
          table.locks.awaitUnlocked(slot);
        }
        continue;
      }
      return ttlOf(expiresAt, time.nanos());
    }
    try (Op op = begin()) {
      Table.Held h = op.lockCounter(k[0] != null ? k[0] : new Key(key), false);
      return h == null || !h.present ? TTL_MISSING : ttlOf(h.expiresAt, time.nanos());
    }
  }

  private static long ttlOf(long expiresAt, long now) {
    if (expiresAt == 0) {
      return TTL_PERMANENT;
    }
    return Table.expired(expiresAt, now) ? TTL_MISSING : expiresAt - now;
  }

  @Override
  public List<String> keys(String prefix) {
    checkOpen();
    byte[] p = prefix.getBytes(StandardCharsets.UTF_8);
    long now = time.nanos();
    List<String> keys = new ArrayList<>();
    int segments = file.segmentCount();
    for (int s = 0; s < segments; s++) {
      long base = file.segmentOffset(s);
      long slots = file.segmentSlots(s);
      for (long i = 0; i < slots; i++) {
        if (!Table.isSlot(i)) {
          continue;
        }
        long slot = base + i * SLOT;
        table.audit(s, slot & -Layout.PAGE);
        for (int round = 0; round < MAX_READ_ROUNDS; round++) {
          long meta = map.getLongVolatile(slot + S_META);
          if (Table.state(meta) != LIVE || Table.record(meta)) {
            break; // not a live counter
          }
          long mask = map.getLongVolatile(slot + S_MASK);
          long expiresAt = map.getLongVolatile(slot + S_EXPIRY);
          int keyRef = map.getIntVolatile(slot + S_KEY_REF);
          boolean match = !Table.expired(expiresAt, now) && table.heap.startsWith(keyRef, p);
          byte[] bytes = match ? table.heap.read(keyRef) : null;
          if (map.getLongVolatile(slot + S_META) != meta || map.getLongVolatile(slot + S_MASK) != mask) {
            continue; // changed while we read it
          }
          if (bytes != null) {
            keys.add(new String(bytes, StandardCharsets.UTF_8));
          }
          break;
        }
      }
    }
    return keys;
  }

  // ---------------------------------------------------------------- writes

  @Override
  public void put(String key, Number value, long ttlNanos) {
    checkOpen();
    try (Op op = begin()) {
      putLocked(op, new Key(key), value, ttlNanos);
      commit(op);
    }
  }

  void putLocked(Op op, Key key, Number value, long ttlNanos) {
    Table.Held h = op.lockCounter(key, true);
    h.set(value instanceof Double, bits(value), expiry(ttlNanos, time.nanos()));
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    checkOpen();
    Key[] k = new Key[1];
    Table.Ref ref = ref(key, k);
    if (ref != null) {
      long slot = ref.slot();
      long expiresAt = map.getLongVolatile(slot + S_EXPIRY);
      long r = map.getLongVolatile(slot + S_RAW);
      if (r != SEALED && map.getLongVolatile(slot + S_MASK) == ref.mask()
          && !Table.expired(expiresAt, time.nanos())) {
        return false; // linearizes here: the key was live
      }
    }
    try (Op op = begin()) {
      boolean added = addLocked(op, k[0] != null ? k[0] : new Key(key), value, ttlNanos);
      if (added) {
        commit(op);
      }
      return added;
    }
  }

  boolean addLocked(Op op, Key key, Number value, long ttlNanos) {
    Table.Held h = op.lockCounter(key, true);
    if (h.present) {
      return false;
    }
    h.set(value instanceof Double, bits(value), expiry(ttlNanos, time.nanos()));
    return true;
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    checkOpen();
    try (Op op = begin()) {
      Number value = popLocked(op, new Key(key), integerOnly);
      if (value != null) {
        commit(op);
      }
      return value;
    }
  }

  Number popLocked(Op op, Key key, boolean integerOnly) {
    Table.Held h = op.lockCounter(key, false);
    if (h == null || !h.present) {
      return null;
    }
    if (integerOnly && h.floating) {
      throw CounterMath.notAnInteger(key.string);
    }
    Number value = h.value();
    h.remove();
    return value;
  }

  @Override
  public boolean delete(String key) {
    checkOpen();
    try (Op op = begin()) {
      boolean was = deleteLocked(op, new Key(key));
      if (!op.held.isEmpty()) {
        commit(op);
      }
      refs.remove(key);
      return was;
    }
  }

  boolean deleteLocked(Op op, Key key) {
    Table.Held h = op.lockCounter(key, false);
    if (h == null) {
      return false;
    }
    boolean was = h.present;
    h.remove();
    return was;
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    checkOpen();
    try (Op op = begin()) {
      boolean live = touchLocked(op, new Key(key), ttlNanos);
      if (live) {
        commit(op);
      }
      return live;
    }
  }

  boolean touchLocked(Op op, Key key, long ttlNanos) {
    Table.Held h = op.lockCounter(key, false);
    if (h == null || !h.present) {
      return false;
    }
    h.set(h.floating, h.bits, expiry(ttlNanos, time.nanos()));
    return true;
  }

  // ---------------------------------------------------------------- transactions

  @Override
  public Number[] transact(List<TxOp> ops) {
    checkOpen();
    SortedMap<String, Key> keys = transactionKeys(ops, 0);
    try (Op op = begin()) {
      Number[] results = transactLocked(op, keys, ops);
      commit(op);
      return results;
    }
  }

  /**
   * The distinct keys of {@code ops}, in order; refused if there are more than a journal entry
   * holds, less {@code reserved} images taken by other slots of the same {@link Op}.
   */
  static SortedMap<String, Key> transactionKeys(List<TxOp> ops, int reserved) {
    TreeMap<String, Key> keys = new TreeMap<>();
    for (TxOp op : ops) {
      keys.computeIfAbsent(op.key(), Key::new);
    }
    int most = Layout.ENTRY_IMAGES - reserved;
    if (keys.size() > most) {
      throw new IllegalArgumentException("a transaction on the file store may touch at most "
          + most + " distinct keys" + (reserved > 0 ? " when it carries an operation id" : "")
          + "; this one touches " + keys.size());
    }
    return keys;
  }

  Number[] transactLocked(Op op, SortedMap<String, Key> keys, List<TxOp> ops) {
    Map<String, Table.Held> held = new HashMap<>();
    for (Key k : keys.values()) { // in key order, the same in every process: no deadlock
      held.put(k.string, op.lockCounter(k, true));
    }
    long now = time.nanos();
    Number[] results = new Number[ops.size()];
    for (int i = 0; i < results.length; i++) {
      TxOp o = ops.get(i);
      results[i] = apply(held.get(o.key()), o, now);
    }
    return results;
  }

  private static long sum(String key, long value, TxOp.Incr incr) {
    return incr.bounds() == null
        ? CounterMath.add(key, value, incr.delta())
        : CounterMath.addWithin(key, value, incr.delta(), incr.bounds());
  }

  private static Number apply(Table.Held h, TxOp op, long now) {
    String key = op.key();
    if (op instanceof TxOp.Incr incr) {
      long next;
      if (!h.livePresent()) {
        if (!incr.create()) {
          throw new KeyNotFoundException(key);
        }
        next = sum(key, incr.dflt(), incr);
        h.set(false, next, 0);
      } else {
        if (h.liveFloating()) {
          throw CounterMath.notAnInteger(key);
        }
        next = sum(key, h.liveBits(), incr);
        h.set(false, next, h.liveExpiresAt());
      }
      return next;
    } else if (op instanceof TxOp.IncrDouble incr) {
      double next;
      if (!h.livePresent()) {
        next = CounterMath.add(key, incr.dflt(), incr.delta());
        h.set(true, Double.doubleToRawLongBits(next), 0);
      } else {
        long b = h.liveBits();
        double base = h.liveFloating() ? Double.longBitsToDouble(b) : (double) b;
        next = CounterMath.add(key, base, incr.delta());
        h.set(true, Double.doubleToRawLongBits(next), h.liveExpiresAt());
      }
      return next;
    } else if (op instanceof TxOp.Put put) {
      h.set(put.value() instanceof Double, bits(put.value()), expiry(put.ttlNanos(), now));
      return put.value();
    } else if (op instanceof TxOp.Delete) {
      boolean was = h.livePresent();
      h.remove();
      return was ? 1L : 0L;
    } else if (op instanceof TxOp.Get) {
      return h.livePresent() ? h.value() : null;
    }
    throw new IllegalArgumentException("unknown transaction operation " + op);
  }

  // ---------------------------------------------------------------- rate limiters

  /**
   * Runs the limiter's state machine under the slot lock of its key. The state is a record in
   * the key heap, replaced copy-on-write (see {@link Table}): the machine runs on a copy, its
   * result goes to a new record, and the commit points the slot at it. When the machine returns
   * no state (the limiter is full again), the slot points at a tombstone record of no words that
   * keeps the instant, for {@link #TOMBSTONE_NANOS}; a reset deletes the slot. The slot expires
   * when the limiter would be full, so the sweeper reclaims limiters nobody uses.
   *
   * <p>Time: the file has no clock, so decisions are taken at this store's {@link TimeSource},
   * but never before the record's "last now", the latest time any process decided on this
   * state at. A process whose clock is behind (or was set back) therefore decides at the time
   * the state was last written at, and stored time never moves backwards.
   */
  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    checkOpen();
    Key key = new Key(call.key());
    if (table.find(key) == null) {
      // No state: decided on nothing. If that leaves nothing to store (a peek, a refund, a
      // reset), the answer linearizes at the lookup and needs no lock.
      LimiterOutcome out = call.apply(null, time.nanos(), operation, permits);
      if (out.record() == null) {
        return out.decision();
      }
    }
    try (Op op = begin()) {
      Decision d = limitLocked(op, key, call, operation, permits);
      commit(op);
      return d;
    }
  }

  Decision limitLocked(Op op, Key key, LimiterCall call, LimiterOperation operation, long permits) {
    Table.Held h = op.lockRecord(key, true);
    long now = time.nanos();
    KeyHeap.State st = storedState(h, key, operation);
    KeyHeap.State stored = null;
    if (st != null) { // live, expired, or full again (a tombstone): its last now is the floor
      now = Math.max(now, st.lastNow());
      stored = live(h, st, now);
    }
    LimiterOutcome out = call.apply(stored == null ? null
        : LimiterRecord.read(key.string, RECORD_VERSION, stored.lastNow(), stored.words().clone()),
        now, operation, permits);
    write(h, stored, out, operation, now, now);
    return out.decision();
  }

  /**
   * {@link JointLimit} over the limiters' slots, each locked by one {@link Op} in key order (the
   * same in every process, so overlapping decisions cannot deadlock) and decided at one reading of
   * the clock; their new records are written, and committed together, only if every one allows.
   */
  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    checkOpen();
    if (calls.size() > Layout.ENTRY_IMAGES) {
      throw new IllegalArgumentException("a joint decision on the file store may take at most "
          + Layout.ENTRY_IMAGES + " limiters; this one takes " + calls.size());
    }
    TreeMap<String, Integer> order = new TreeMap<>();
    for (int i = 0; i < calls.size(); i++) {
      order.put(calls.get(i).key(), i);
    }
    try (Op op = begin()) {
      Table.Held[] held = new Table.Held[calls.size()];
      Key[] keys = new Key[calls.size()];
      for (int i : order.values()) {
        keys[i] = new Key(calls.get(i).key());
        held[i] = op.lockRecord(keys[i], true);
      }
      long now = time.nanos();
      KeyHeap.State[] live = new KeyHeap.State[held.length];
      LimiterRecord[] stored = new LimiterRecord[held.length];
      for (int i = 0; i < held.length; i++) {
        KeyHeap.State st = storedState(held[i], keys[i], LimiterOperation.ACQUIRE);
        if (st != null) {
          live[i] = live(held[i], st, Math.max(now, st.lastNow()));
          stored[i] = live[i] == null ? LimiterRecord.tombstone(st.lastNow())
              : LimiterRecord.read(keys[i].string, RECORD_VERSION, st.lastNow(), st.words());
        }
      }
      JointLimit.Result result = JointLimit.decide(calls, stored, now, permitsEach);
      if (result.allowed()) {
        for (int i = 0; i < held.length; i++) {
          LimiterOutcome out = result.outcomes()[i];
          write(held[i], live[i], out, LimiterOperation.ACQUIRE, out.decidedAt(), now);
        }
      }
      commit(op); // a refusal writes nothing; slots claimed for missing keys are given back
      return result.decisions();
    }
  }

  /**
   * Stops this store's daemon thread (flushes, recovery of dead processes' leftovers, sweeps),
   * for tests that compare the file with a model that does not sweep.
   */
  void stopMaintenance() {
    maintenance.stop();
  }

  /**
   * The limiter state under {@code key} as the file holds it, expired or full again (a
   * tombstone): its last now, its expiry, then its words; null if none. Read under the slot's
   * lock, changing nothing. For the limiter vectors, which compare it with the machine's.
   */
  long[] limiterState(String key) {
    checkOpen();
    Key k = new Key(key);
    try (Op op = begin()) { // closed uncommitted: nothing to write
      Table.Held h = op.lockRecord(k, false);
      KeyHeap.State st = h == null ? null : storedState(h, k, LimiterOperation.PEEK);
      if (st == null) {
        return null;
      }
      long[] r = new long[2 + st.words().length];
      r[0] = st.lastNow();
      r[1] = h.expiresAt;
      System.arraycopy(st.words(), 0, r, 2, st.words().length);
      return r;
    }
  }

  /**
   * The checked state a held limiter's slot points at (live, expired, or a tombstone), or null if
   * it has none.
   *
   * @throws StoreException if the record is damaged, unless {@code operation} resets it
   */
  private KeyHeap.State storedState(Table.Held h, Key key, LimiterOperation operation) {
    if (!h.record) {
      return null;
    }
    KeyHeap.State st = h.mask == (h.bits ^ SEALED) && h.bits >>> 32 == 0
        ? table.heap.readRecord((int) h.bits, key.hash) : null;
    if (st != null && st.checked()) {
      return st;
    }
    if (operation == LimiterOperation.RESET) {
      h.record = false; // forgotten; and its damaged reference never reaches a free list
      return null;
    }
    throw new StoreException("the state of rate limiter '" + key + "' in " + file.path()
        + " is damaged (the record at " + h.bits + " of the slot at offset " + h.slot
        + " fails its check); reset the limiter to start it afresh");
  }

  /** {@code st} if it still holds state at {@code now}: not expired, not a tombstone. */
  private static KeyHeap.State live(Table.Held h, KeyHeap.State st, long now) {
    return !Table.expired(h.expiresAt, now) && st.words().length > 0 ? st : null;
  }

  /**
   * Points the held slot at {@code out}'s record, decided at {@code decidedAt}, kept from
   * {@code storeNow} (the clock reading the machine was given).
   */
  private void write(Table.Held h, KeyHeap.State stored, LimiterOutcome out, LimiterOperation operation,
      long decidedAt, long storeNow) {
    long[] next = out.record();
    Key key = h.key;
    if (next == null) {
      if (operation == LimiterOperation.RESET || (h.state == LIVE && !h.record)) {
        if (h.state == LIVE) {
          h.remove(); // forgotten (a claimed slot is given back by the commit anyway)
        }
      } else if (stored != null) {
        // Full again: a tombstone, a record of no words that expires at once (so the name reads
        // as missing, and is free for a counter) but keeps now, so a process whose clock lags
        // decides no earlier than this one did. The sweeper reclaims it a day later.
        h.setRecord(table.heap.allocateRecord(key.hash, decidedAt, new long[0]), decidedAt == 0 ? 1 : decidedAt);
      } // else no state before and none after: an expired record or a tombstone stays as it is
    } else {
      long expiresAt = storeNow + Math.max(1, out.keepNanos());
      if (stored == null || expiresAt != h.expiresAt || !Arrays.equals(next, stored.words())) {
        h.setRecord(table.heap.allocateRecord(key.hash, decidedAt, next), expiresAt == 0 ? 1 : expiresAt);
      } // else unchanged (a peek, a denial): nothing to write
    }
  }

  /** One step of a concurrency limit, in one file transaction: see {@link LocalConcurrency}. */
  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    checkOpen();
    return concurrency.step(call);
  }

  // ---------------------------------------------------------------- operation ids

  /**
   * Applies {@code mutation} once per {@code id}: the id's record and the mutation are written by
   * one {@link Op}, so they are committed, rolled back or recovered together. See
   * {@link OperationIds}.
   */
  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    checkOpen();
    return operationIds.applyOnce(id, mutation);
  }

  /** How long a full limiter's tombstone keeps its last instant before the sweeper reclaims it. */
  static final long TOMBSTONE_NANOS = 86_400_000_000_000L;

  // ---------------------------------------------------------------- helpers

  private static long bits(Number value) {
    return value instanceof Double d ? Double.doubleToRawLongBits(d) : value.longValue();
  }

  private static long expiry(long ttlNanos, long now) {
    if (ttlNanos == NO_TTL) {
      return 0;
    }
    long at = now + ttlNanos;
    return at == 0 ? 1 : at; // 0 means "never"
  }

  /**
   * Turns expired counters and limiters into tombstones (freeing limiters' records), scanning at
   * most {@code budget} slots.
   */
  int sweep(long[] cursor, long budget) {
    int removed = 0;
    long now = time.nanos();
    int segments = file.segmentCount();
    for (long n = 0; n < budget; n++) {
      int s = (int) (cursor[0] >>> 40);
      long i = cursor[0] & ((1L << 40) - 1);
      if (s >= segments) {
        cursor[0] = 0;
        break;
      }
      if (i >= file.segmentSlots(s)) {
        cursor[0] = (long) (s + 1) << 40;
        continue;
      }
      cursor[0]++;
      if (!Table.isSlot(i)) {
        continue;
      }
      long slot = file.segmentOffset(s) + i * SLOT;
      try {
        table.audit(s, slot & -Layout.PAGE);
      } catch (StoreException e) {
        cursor[0] = ((long) s << 40) | ((i | (SLOTS_PER_PAGE - 1)) + 1); // a damaged page is left as it is
        continue;
      }
      long meta = map.getLongVolatile(slot + S_META);
      if (Table.state(meta) != LIVE || !Table.expired(map.getLongVolatile(slot + S_EXPIRY), now)
          || map.getLongVolatile(slot + S_LOCK) != 0 || keptTombstone(slot, meta, now)) {
        continue;
      }
      try (Op op = begin()) {
        Table.Held h = table.tryLockExpired(op, slot, now);
        if (h != null && !keptTombstone(slot, map.getLongVolatile(slot + S_META), now)) {
          h.remove();
          op.commit();
          removed++;
        }
      }
    }
    return removed;
  }

  /** Whether {@code slot} is a full limiter's tombstone still keeping its last instant. */
  private boolean keptTombstone(long slot, long meta, long now) {
    if (!Table.record(meta)) {
      return false;
    }
    long held = map.getLong(slot + Layout.S_HELD);
    KeyHeap.State st = held >>> 32 != 0 ? null : table.heap.readRecord((int) held, map.getLong(slot + Layout.S_KEY_HASH));
    return st != null && st.words().length == 0
        && !Table.expired(map.getLong(slot + S_EXPIRY) + TOMBSTONE_NANOS, now);
  }

  /** Sweeps the whole table now; for tests. */
  int sweepAll() {
    long[] cursor = {0};
    long total = 0;
    for (int s = 0; s < file.segmentCount(); s++) {
      total += file.segmentSlots(s) + 1;
    }
    return sweep(cursor, total);
  }

  /**
   * Blocking only with {@code sync=always}, where every write waits for an {@code msync}. Otherwise
   * an operation is a few hundred nanoseconds of work on mapped memory, less than the two thread
   * switches of running it on an executor: its waits are for another thread's or process's locked
   * section, which is as short, or for the recovery of a dead holder's lock (about a millisecond,
   * see {@link Locks}), and the rare growth of the table appends a segment. So the asynchronous API
   * runs it on the caller's thread, an event loop included; {@code keys} is a scan and runs on the
   * executor whatever this says.
   */
  @Override
  public boolean blocking() {
    return options.sync() == LocalOptions.Sync.ALWAYS;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    maintenance.stop();
    try {
      if (options.sync() != LocalOptions.Sync.NONE) {
        map.forceAll();
      }
    } finally {
      file.release();
    }
  }

  @Override
  public String toString() {
    return "LocalStore[" + file.path() + ", sync=" + options.sync().name().toLowerCase(Locale.ROOT) + "]";
  }
}
