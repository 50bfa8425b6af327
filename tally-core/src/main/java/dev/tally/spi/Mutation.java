package dev.tally.spi;

import dev.tally.Decision;
import java.util.List;

/**
 * A mutating store operation as a value, so that a store can apply it once per
 * {@link OperationId} ({@link Store#applyOnce}). Each kind names its {@link Store} namesake and
 * the type of its result; {@link #applyTo} is the plain, not-idempotent application.
 *
 * <p>The {@link #fingerprint()} is what a store keeps beside an id's result to tell a retry of
 * the same operation from a different operation that reuses the id, which is refused with
 * {@link dev.tally.OperationIdConflictException}. It is a 64-bit hash of the
 * operation (its kind, keys and arguments; a limiter step leaves out the limits, since the
 * stored limits decide), the same in every process and version, computed without allocating.
 */
public sealed interface Mutation {

  /** The key this operation touches; the first key of a transaction. */
  String key();

  /**
   * A stable 64-bit hash of the operation's kind and arguments, in order (FNV-1a over strings'
   * UTF-16 code units and numbers' 64-bit forms): the same in every process, host and version.
   */
  long fingerprint();

  /** Applies this operation to {@code store} once, without an id. */
  Object applyTo(Store store);

  /** {@link Store#incr}; result {@code Long}. */
  record Incr(String key, long delta, long dflt, boolean create) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(1).add(key).add(delta).add(dflt).add(create).value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.incr(key, delta, dflt, create);
    }
  }

  /** {@link Store#incrDouble}; result {@code Double}. */
  record IncrDouble(String key, double delta, double dflt) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(2).add(key).add(delta).add(dflt).value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.incrDouble(key, delta, dflt);
    }
  }

  /** {@link Store#put}; result {@code null}. */
  record Put(String key, Number value, long ttlNanos) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(3).add(key).add(value).add(ttlNanos).value();
    }

    @Override
    public Object applyTo(Store store) {
      store.put(key, value, ttlNanos);
      return null;
    }
  }

  /** {@link Store#add}; result {@code Boolean}. */
  record Add(String key, Number value, long ttlNanos) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(4).add(key).add(value).add(ttlNanos).value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.add(key, value, ttlNanos);
    }
  }

  /** {@link Store#pop}; result the popped {@code Long} or {@code Double}, or {@code null}. */
  record Pop(String key, boolean integerOnly) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(5).add(key).add(integerOnly).value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.pop(key, integerOnly);
    }
  }

  /** {@link Store#delete}; result {@code Boolean}. */
  record Delete(String key) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(6).add(key).value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.delete(key);
    }
  }

  /** {@link Store#touch}; result {@code Boolean}. */
  record Touch(String key, long ttlNanos) implements Mutation {
    @Override
    public long fingerprint() {
      return Fingerprint.of(7).add(key).add(ttlNanos).value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.touch(key, ttlNanos);
    }
  }

  /** {@link Store#transact}; result {@code Number[]}. */
  record Transact(List<TxOp> ops) implements Mutation {
    public Transact {
      ops = List.copyOf(ops);
      if (ops.isEmpty()) {
        throw new IllegalArgumentException("a transaction needs at least one operation");
      }
    }

    @Override
    public String key() {
      return ops.get(0).key();
    }

    @Override
    public long fingerprint() {
      Fingerprint f = Fingerprint.of(8).add(ops.size());
      for (TxOp op : ops) {
        if (op instanceof TxOp.Incr i) {
          f.add(1).add(i.key()).add(i.delta()).add(i.dflt()).add(i.create());
          if (i.bounds() != null) {
            f.add(11).add(i.bounds().min()).add(i.bounds().max()).add(i.bounds().saturates());
          }
        } else if (op instanceof TxOp.IncrDouble d) {
          f.add(2).add(d.key()).add(d.delta()).add(d.dflt());
        } else if (op instanceof TxOp.Put p) {
          f.add(3).add(p.key()).add(p.value()).add(p.ttlNanos());
        } else if (op instanceof TxOp.Delete d) {
          f.add(6).add(d.key());
        } else {
          f.add(10).add(op.key());
        }
      }
      return f.value();
    }

    @Override
    public Object applyTo(Store store) {
      return store.transact(ops);
    }
  }

  /** {@link Store#limit}; result {@code Decision}. */
  record LimiterStep(LimiterCall call, LimiterOperation operation, long permits) implements Mutation {
    @Override
    public String key() {
      return call.key();
    }

    @Override
    public long fingerprint() {
      return Fingerprint.of(9).add(call.key()).add(operation.name()).add(permits).value();
    }

    @Override
    public Object applyTo(Store store) {
      Decision d = store.limit(call, operation, permits);
      return d;
    }
  }
}
