package dev.tally.internal;

import dev.tally.KeyNotFoundException;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A deliberately broken store, to show that the linearizability checker catches real bugs: the
 * obvious {@code ConcurrentHashMap<String, AtomicLong>} design that {@link MemoryStore}'s class
 * comment explains is wrong, with one flaw made wide (a short sleep inside the racy window) so
 * that a few hundred short trials hit it reliably.
 */
final class AtomicLongMapStore implements Store {

  /** Which race to widen. */
  enum Flaw {
    /** {@code pop} reads the value, then removes the key: increments in between are lost. */
    POP_READS_THEN_REMOVES,
    /** {@code incr} reads, then writes back the sum: concurrent increments overwrite each other. */
    INCR_READS_THEN_WRITES
  }

  private static final long WINDOW_NANOS = 50_000;

  private final ConcurrentHashMap<String, AtomicLong> map = new ConcurrentHashMap<>();
  private final Flaw flaw;

  AtomicLongMapStore(Flaw flaw) {
    this.flaw = flaw;
  }

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    AtomicLong cell = map.get(key);
    if (cell == null) {
      if (!create) {
        throw new KeyNotFoundException(key);
      }
      cell = map.computeIfAbsent(key, k -> new AtomicLong(dflt));
    }
    if (flaw == Flaw.INCR_READS_THEN_WRITES) {
      long next = dev.tally.spi.CounterMath.add(key, cell.get(), delta);
      LockSupport.parkNanos(WINDOW_NANOS);
      cell.set(next);
      return next;
    }
    return cell.updateAndGet(v -> dev.tally.spi.CounterMath.add(key, v, delta));
  }

  @Override
  public Number get(String key) {
    AtomicLong cell = map.get(key);
    return cell == null ? null : cell.get();
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    map.put(key, new AtomicLong(value.longValue()));
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return map.putIfAbsent(key, new AtomicLong(value.longValue())) == null;
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    if (flaw == Flaw.POP_READS_THEN_REMOVES) {
      AtomicLong cell = map.get(key);
      if (cell == null) {
        return null;
      }
      long value = cell.get();
      LockSupport.parkNanos(WINDOW_NANOS);
      map.remove(key, cell);
      return value;
    }
    AtomicLong cell = map.remove(key);
    return cell == null ? null : cell.get();
  }

  @Override
  public boolean delete(String key) {
    return map.remove(key) != null;
  }

  /** One increment after the other: not atomic either, but not the flaw under test. */
  @Override
  public Number[] transact(List<TxOp> ops) {
    Number[] results = new Number[ops.size()];
    for (int i = 0; i < results.length; i++) {
      TxOp.Incr incr = (TxOp.Incr) ops.get(i);
      results[i] = incr(incr.key(), incr.delta(), incr.dflt(), incr.create());
    }
    return results;
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    throw new UnsupportedOperationException();
  }

  @Override
  public long ttl(String key) {
    throw new UnsupportedOperationException();
  }

  @Override
  public List<String> keys(String prefix) {
    throw new UnsupportedOperationException();
  }

  @Override
  public boolean blocking() {
    return false;
  }

  @Override
  public void close() {
    map.clear();
  }
}
