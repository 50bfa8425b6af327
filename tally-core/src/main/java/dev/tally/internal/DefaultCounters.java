package dev.tally.internal;

import dev.tally.AsyncCounters;
import dev.tally.Bounds;
import dev.tally.BoundedResult;
import dev.tally.CounterBoundException;
import dev.tally.Counters;
import dev.tally.Expiry;
import dev.tally.FailurePolicy;
import dev.tally.NotAnIntegerException;
import dev.tally.StoreException;
import dev.tally.Transaction;
import dev.tally.TransactionResult;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.function.Consumer;

/**
 * {@link Counters} over a {@link Store}: validates, prefixes, and applies the failure policy.
 * When the policy answers for a failed store, it answers exactly as the {@code null:} store
 * would, so fail-open behaviour is documented (and tested) once.
 */
final class DefaultCounters implements Counters {
  static final Store FAIL_OPEN_ANSWERS = new NullStore();

  private final Group group;
  private volatile AsyncCounters async;

  DefaultCounters(Group group) {
    this.group = group;
  }

  static long negate(String key, long delta) {
    if (delta == Long.MIN_VALUE) {
      throw new IllegalArgumentException("cannot decrement '" + key + "' by Long.MIN_VALUE, whose"
          + " negation is not a 64-bit integer; use incr with a positive delta");
    }
    return -delta;
  }

  /**
   * A bounded increment as a one-operation transaction, which every store applies atomically;
   * checked here so that bad input changes nothing on any store.
   */
  static TxOp.Incr bounded(String fullKey, long delta, long dflt, Bounds bounds) {
    if (bounds == null) {
      throw new IllegalArgumentException("bounds must not be null; use incr without bounds");
    }
    if (!bounds.contains(dflt)) {
      throw new IllegalArgumentException("the default " + dflt + " of counter '" + fullKey
          + "' lies outside its bounds [" + bounds.min() + ", " + bounds.max() + "]");
    }
    return new TxOp.Incr(fullKey, delta, dflt, true, bounds);
  }

  /** The store's answer to a bounded increment, as the caller sees it. */
  static BoundedResult boundedResult(Number[] results) {
    return new BoundedResult(true, (Long) results[0]);
  }

  private String key(String key) {
    return Checks.key(group.prefix(), key);
  }

  private Store onFailure(String op, String key, StoreException e) {
    group.failures().answerOrThrow(group.policy(), false, op, key, e);
    return FAIL_OPEN_ANSWERS;
  }

  @Override
  public String name() {
    return group.name();
  }

  @Override
  public FailurePolicy failurePolicy() {
    return group.policy();
  }

  @Override
  public Counters withFailurePolicy(FailurePolicy policy) {
    return new DefaultCounters(group.withPolicy(policy));
  }

  @Override
  public AsyncCounters async() {
    AsyncCounters a = async;
    if (a == null) {
      async = a = new DefaultAsyncCounters(group);
    }
    return a;
  }

  @Override
  public long incr(String key) {
    return incr(key, 1, 0);
  }

  @Override
  public long incr(String key, long delta) {
    return incr(key, delta, 0);
  }

  @Override
  public long incr(String key, long delta, long dflt) {
    String k = key(key);
    try {
      return group.store().incr(k, delta, dflt, true);
    } catch (StoreException e) {
      return onFailure("incr", k, e).incr(k, delta, dflt, true);
    }
  }

  @Override
  public long incrExisting(String key, long delta) {
    // No failure policy: fail-open cannot invent the value of a counter that must exist.
    return group.store().incr(key(key), delta, 0, false);
  }

  @Override
  public long decr(String key) {
    return incr(key, -1, 0);
  }

  @Override
  public long decr(String key, long delta) {
    return incr(key, negate(key, delta), 0);
  }

  @Override
  public long decr(String key, long delta, long dflt) {
    return incr(key, negate(key, delta), dflt);
  }

  @Override
  public long decrExisting(String key, long delta) {
    return incrExisting(key, negate(key, delta));
  }

  @Override
  public BoundedResult incr(String key, long delta, long dflt, Bounds bounds) {
    List<TxOp> ops = List.of(bounded(key(key), delta, dflt, bounds));
    try {
      try {
        return boundedResult(group.store().transact(ops));
      } catch (StoreException e) {
        return boundedResult(onFailure("incr", ops.get(0).key(), e).transact(ops));
      }
    } catch (CounterBoundException e) {
      return new BoundedResult(false, e.value());
    }
  }

  @Override
  public BoundedResult decr(String key, long delta, long dflt, Bounds bounds) {
    return incr(key, negate(key, delta), dflt, bounds);
  }

  @Override
  public double incr(String key, double delta, double dflt) {
    String k = key(key);
    Checks.finite(delta, "delta");
    Checks.finite(dflt, "default");
    try {
      return group.store().incrDouble(k, delta, dflt);
    } catch (StoreException e) {
      return onFailure("incr", k, e).incrDouble(k, delta, dflt);
    }
  }

  @Override
  public double incr(String key, double delta) {
    return incr(key, delta, 0.0);
  }

  @Override
  public OptionalLong get(String key) {
    String k = key(key);
    return asLong(k, read("get", k));
  }

  @Override
  public OptionalDouble getDouble(String key) {
    Number n = read("get", key(key));
    return n == null ? OptionalDouble.empty() : OptionalDouble.of(n.doubleValue());
  }

  private Number read(String op, String k) {
    try {
      return group.store().get(k);
    } catch (StoreException e) {
      return onFailure(op, k, e).get(k);
    }
  }

  static OptionalLong asLong(String key, Number n) {
    if (n == null) {
      return OptionalLong.empty();
    }
    if (n instanceof Double) {
      throw new NotAnIntegerException(key);
    }
    return OptionalLong.of(n.longValue());
  }

  @Override
  public void put(String key, long value) {
    put(key, (Number) value, null);
  }

  @Override
  public void put(String key, long value, Duration ttl) {
    put(key, (Number) value, ttl);
  }

  @Override
  public void put(String key, double value, Duration ttl) {
    put(key, (Number) Checks.finite(value, "value"), ttl);
  }

  private void put(String key, Number value, Duration ttl) {
    String k = key(key);
    long ttlNanos = Checks.ttl(ttl);
    try {
      group.store().put(k, value, ttlNanos);
    } catch (StoreException e) {
      onFailure("put", k, e);
    }
  }

  @Override
  public boolean add(String key, long value, Duration ttl) {
    return add(key, (Number) value, ttl);
  }

  @Override
  public boolean add(String key, double value, Duration ttl) {
    return add(key, (Number) Checks.finite(value, "value"), ttl);
  }

  private boolean add(String key, Number value, Duration ttl) {
    String k = key(key);
    long ttlNanos = Checks.ttl(ttl);
    try {
      return group.store().add(k, value, ttlNanos);
    } catch (StoreException e) {
      return onFailure("add", k, e).add(k, value, ttlNanos);
    }
  }

  @Override
  public OptionalLong pop(String key) {
    String k = key(key);
    return asLong(k, pop(k, true));
  }

  @Override
  public OptionalDouble popDouble(String key) {
    Number n = pop(key(key), false);
    return n == null ? OptionalDouble.empty() : OptionalDouble.of(n.doubleValue());
  }

  private Number pop(String k, boolean integerOnly) {
    try {
      return group.store().pop(k, integerOnly);
    } catch (StoreException e) {
      return onFailure("pop", k, e).pop(k, integerOnly);
    }
  }

  @Override
  public boolean delete(String key) {
    String k = key(key);
    try {
      return group.store().delete(k);
    } catch (StoreException e) {
      return onFailure("delete", k, e).delete(k);
    }
  }

  @Override
  public boolean touch(String key, Duration ttl) {
    String k = key(key);
    long ttlNanos = Checks.ttl(ttl);
    try {
      return group.store().touch(k, ttlNanos);
    } catch (StoreException e) {
      return onFailure("touch", k, e).touch(k, ttlNanos);
    }
  }

  @Override
  public Optional<Duration> ttl(String key) {
    return asTtl(ttlNanos(key(key)));
  }

  private long ttlNanos(String k) {
    try {
      return group.store().ttl(k);
    } catch (StoreException e) {
      return onFailure("ttl", k, e).ttl(k);
    }
  }

  @Override
  public Expiry expiry(String key) {
    return expiry(ttlNanos(key(key)));
  }

  static Optional<Duration> asTtl(long nanos) {
    return nanos < 0 ? Optional.empty() : Optional.of(Duration.ofNanos(nanos));
  }

  @Override
  public List<String> keys(String prefix) {
    String p = Checks.prefix(group.prefix(), prefix);
    List<String> keys;
    try {
      keys = group.store().keys(p);
    } catch (StoreException e) {
      keys = onFailure("keys", p, e).keys(p);
    }
    return group.stripPrefix(keys);
  }

  @Override
  public TransactionResult transaction(Consumer<Transaction> operations) {
    RecordingTransaction tx = new RecordingTransaction(group.prefix());
    operations.accept(tx);
    var ops = tx.close();
    try {
      return new TransactionResult(group.store().transact(ops));
    } catch (StoreException e) {
      return new TransactionResult(onFailure("transaction", ops.get(0).key(), e).transact(ops));
    }
  }

  @Override
  public Counters withOperationId(String id) {
    return new DefaultCounters(group.withOperationId(id));
  }

  @Override
  public String toString() {
    return "Counters[" + (group.name().isEmpty() ? "root" : group.name()) + ", " + group.policy() + "]";
  }

  /** A store's {@link Store#ttl} answer as an {@link Expiry}. */
  static Expiry expiry(long nanos) {
    if (nanos == Store.TTL_MISSING) {
      return Expiry.MISSING;
    }
    if (nanos < 0) {
      return Expiry.PERMANENT;
    }
    return Expiry.after(Duration.ofNanos(nanos));
  }
}
