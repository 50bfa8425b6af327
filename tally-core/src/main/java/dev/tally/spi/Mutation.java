package dev.tally.spi;

import dev.tally.Decision;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A mutating store operation as a value, so that a store can apply it once per
 * {@link OperationId} ({@link Store#applyOnce}). Each kind names its {@link Store} namesake and
 * the type of its result; {@link #applyTo} is the plain, not-idempotent application.
 *
 * <p>The {@link #fingerprint()} is what a store keeps beside an id's result to tell a retry of
 * the same operation from a different operation that reuses the id, which is refused with
 * {@link dev.tally.OperationIdConflictException}. It is a 64-bit hash of a canonical text of the
 * operation (its kind, keys and arguments; a limiter step leaves out the limits, since the
 * stored limits decide), the same in every process and version.
 */
public sealed interface Mutation {

  /** The key this operation touches; the first key of a transaction. */
  String key();

  /** The canonical text the fingerprint hashes. */
  String canonical();

  /** A stable 64-bit hash of {@link #canonical()}. */
  default long fingerprint() {
    return fnv1a(canonical());
  }

  /** Applies this operation to {@code store} once, without an id. */
  Object applyTo(Store store);

  /** {@link Store#incr}; result {@code Long}. */
  record Incr(String key, long delta, long dflt, boolean create) implements Mutation {
    @Override
    public String canonical() {
      return "incr\u0000" + key + "\u0000" + delta + "\u0000" + dflt + "\u0000" + create;
    }

    @Override
    public Object applyTo(Store store) {
      return store.incr(key, delta, dflt, create);
    }
  }

  /** {@link Store#incrDouble}; result {@code Double}. */
  record IncrDouble(String key, double delta, double dflt) implements Mutation {
    @Override
    public String canonical() {
      return "incrDouble\u0000" + key + "\u0000" + delta + "\u0000" + dflt;
    }

    @Override
    public Object applyTo(Store store) {
      return store.incrDouble(key, delta, dflt);
    }
  }

  /** {@link Store#put}; result {@code null}. */
  record Put(String key, Number value, long ttlNanos) implements Mutation {
    @Override
    public String canonical() {
      return "put\u0000" + key + "\u0000" + typed(value) + "\u0000" + ttlNanos;
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
    public String canonical() {
      return "add\u0000" + key + "\u0000" + typed(value) + "\u0000" + ttlNanos;
    }

    @Override
    public Object applyTo(Store store) {
      return store.add(key, value, ttlNanos);
    }
  }

  /** {@link Store#pop}; result the popped {@code Long} or {@code Double}, or {@code null}. */
  record Pop(String key, boolean integerOnly) implements Mutation {
    @Override
    public String canonical() {
      return "pop\u0000" + key + "\u0000" + integerOnly;
    }

    @Override
    public Object applyTo(Store store) {
      return store.pop(key, integerOnly);
    }
  }

  /** {@link Store#delete}; result {@code Boolean}. */
  record Delete(String key) implements Mutation {
    @Override
    public String canonical() {
      return "delete\u0000" + key;
    }

    @Override
    public Object applyTo(Store store) {
      return store.delete(key);
    }
  }

  /** {@link Store#touch}; result {@code Boolean}. */
  record Touch(String key, long ttlNanos) implements Mutation {
    @Override
    public String canonical() {
      return "touch\u0000" + key + "\u0000" + ttlNanos;
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
    public String canonical() {
      StringBuilder b = new StringBuilder("transact");
      for (TxOp op : ops) {
        b.append('\u0001');
        if (op instanceof TxOp.Incr i) {
          b.append("incr\u0000").append(i.key()).append('\u0000').append(i.delta()).append('\u0000')
              .append(i.dflt()).append('\u0000').append(i.create());
        } else if (op instanceof TxOp.IncrDouble d) {
          b.append("incrDouble\u0000").append(d.key()).append('\u0000').append(d.delta())
              .append('\u0000').append(d.dflt());
        } else if (op instanceof TxOp.Put p) {
          b.append("put\u0000").append(p.key()).append('\u0000').append(typed(p.value()))
              .append('\u0000').append(p.ttlNanos());
        } else if (op instanceof TxOp.Delete d) {
          b.append("delete\u0000").append(d.key());
        } else {
          b.append("get\u0000").append(op.key());
        }
      }
      return b.toString();
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
    public String canonical() {
      return "limit\u0000" + call.key() + "\u0000" + operation + "\u0000" + permits;
    }

    @Override
    public Object applyTo(Store store) {
      Decision d = store.limit(call, operation, permits);
      return d;
    }
  }

  private static String typed(Number n) {
    return (n instanceof Double ? "d" : "l") + n;
  }

  /** FNV-1a over the UTF-8 bytes: small, stable, and good enough to catch a reused id. */
  private static long fnv1a(String s) {
    long h = 0xcbf29ce484222325L;
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    return h;
  }
}
