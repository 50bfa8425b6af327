package dev.tally.internal;

import dev.tally.Bounds;
import dev.tally.Transaction;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Records a transaction's operations, validated and with full keys, for {@link Store#transact}. */
final class RecordingTransaction implements Transaction {
  private final String prefix;
  private final List<TxOp> ops = new ArrayList<>();
  private boolean closed;

  RecordingTransaction(String prefix) {
    this.prefix = prefix;
  }

  private Transaction record(TxOp op) {
    if (closed) {
      throw new IllegalStateException("this transaction has been applied; record operations only"
          + " inside the callback passed to transaction()");
    }
    ops.add(op);
    return this;
  }

  private String key(String key) {
    return Checks.key(prefix, key);
  }

  /** The recorded operations; the transaction accepts no more. */
  List<TxOp> close() {
    closed = true;
    if (ops.isEmpty()) {
      throw new IllegalArgumentException("the transaction recorded no operation");
    }
    return List.copyOf(ops);
  }

  @Override
  public Transaction incr(String key) {
    return incr(key, 1, 0);
  }

  @Override
  public Transaction incr(String key, long delta) {
    return incr(key, delta, 0);
  }

  @Override
  public Transaction incr(String key, long delta, long dflt) {
    return record(new TxOp.Incr(key(key), delta, dflt, true));
  }

  @Override
  public Transaction incrExisting(String key, long delta) {
    return record(new TxOp.Incr(key(key), delta, 0, false));
  }

  @Override
  public Transaction decr(String key, long delta) {
    return record(new TxOp.Incr(key(key), DefaultCounters.negate(key, delta), 0, true));
  }

  @Override
  public Transaction incr(String key, long delta, long dflt, Bounds bounds) {
    return record(DefaultCounters.bounded(key(key), delta, dflt, bounds));
  }

  @Override
  public Transaction decr(String key, long delta, long dflt, Bounds bounds) {
    return record(DefaultCounters.bounded(key(key), DefaultCounters.negate(key, delta), dflt, bounds));
  }

  @Override
  public Transaction incr(String key, double delta, double dflt) {
    return record(new TxOp.IncrDouble(key(key), Checks.finite(delta, "delta"), Checks.finite(dflt, "default")));
  }

  @Override
  public Transaction put(String key, long value, Duration ttl) {
    return record(new TxOp.Put(key(key), value, Checks.ttl(ttl)));
  }

  @Override
  public Transaction delete(String key) {
    return record(new TxOp.Delete(key(key)));
  }

  @Override
  public Transaction get(String key) {
    return record(new TxOp.Get(key(key)));
  }
}
