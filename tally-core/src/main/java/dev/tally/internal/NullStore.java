package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.KeyNotFoundException;
import dev.tally.Limit;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.CounterMath;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.util.List;

/**
 * The {@code null:} store keeps nothing, like a disabled cache: every counter is always missing,
 * so {@code incr} returns {@code default + delta} every time and reads find nothing. Useful to
 * switch counting off without changing code; useless for anything that must add up (every view
 * would be the first). Input is still validated, and overflow of {@code default + delta} is
 * still an error, so code that works here does not break on a real store. Rate limiters always
 * allow and report their configured limit.
 */
final class NullStore implements Store {

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    if (!create) {
      throw new KeyNotFoundException(key);
    }
    return CounterMath.add(key, dflt, delta);
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    return CounterMath.add(key, dflt, delta);
  }

  @Override
  public Number get(String key) {
    return null;
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {}

  /** Returns true: the key was missing, so the set "happened", and was forgotten at once. */
  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return true;
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    return null;
  }

  @Override
  public boolean delete(String key) {
    return false;
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    return false;
  }

  @Override
  public long ttl(String key) {
    return TTL_MISSING;
  }

  @Override
  public List<String> keys(String prefix) {
    return List.of();
  }

  @Override
  public Number[] transact(List<TxOp> ops) {
    Number[] results = new Number[ops.size()];
    for (int i = 0; i < results.length; i++) {
      TxOp op = ops.get(i);
      if (op instanceof TxOp.Incr incr && incr.bounds() != null) {
        if (!incr.create()) {
          throw new KeyNotFoundException(incr.key());
        }
        results[i] = CounterMath.addWithin(incr.key(), incr.dflt(), incr.delta(), incr.bounds());
      } else if (op instanceof TxOp.Incr incr) {
        results[i] = incr(incr.key(), incr.delta(), incr.dflt(), incr.create());
      } else if (op instanceof TxOp.IncrDouble incr) {
        results[i] = incrDouble(incr.key(), incr.delta(), incr.dflt());
      } else if (op instanceof TxOp.Put put) {
        results[i] = put.value();
      } else if (op instanceof TxOp.Delete) {
        results[i] = 0L;
      } else {
        results[i] = null;
      }
    }
    return results;
  }

  /** Always allows, reporting the configured limit as untouched: nothing is ever consumed. */
  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    List<Limit> limits = call.limits();
    long limit = Long.MAX_VALUE;
    int deciding = 0;
    long[] perLimit = limits.size() > 1 ? new long[3 * limits.size()] : null;
    for (int i = 0; i < limits.size(); i++) {
      long l = limits.get(i).limit();
      if (l < limit) {
        limit = l;
        deciding = i;
      }
      if (perLimit != null) {
        perLimit[3 * i] = l;
        perLimit[3 * i + 1] = l;
      }
    }
    return new Decision(true, limit, limit, 0, 0, deciding, perLimit);
  }

  /** Always allows every one: nothing is kept, so there is nothing to take atomically. */
  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    Decision[] ds = new Decision[calls.size()];
    for (int i = 0; i < ds.length; i++) {
      ds[i] = limit(calls.get(i), LimiterOperation.ACQUIRE, permitsEach);
    }
    return ds;
  }

  @Override
  public boolean blocking() {
    return false;
  }

  @Override
  public void close() {}

  /**
   * Applies nothing, as every call here does: the answer is what the call without an id would
   * give ({@code default + delta} for an increment), so a repeat gives the same answer.
   */
  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return mutation.applyTo(this);
  }
}
