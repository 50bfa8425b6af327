package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * A store as seen through {@code withOperationId(id)}: every mutation goes to
 * {@link Store#applyOnce} with the id; reads and peeks pass through. Counters and limiters over
 * it need no idempotency code of their own.
 */
final class OnceStore implements Store {
  private final Store store;
  private final OperationId id;

  OnceStore(Store store, OperationId id) {
    this.store = store;
    this.id = id;
  }

  private Object once(Mutation m) {
    return store.applyOnce(id, m);
  }

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    return (Long) once(new Mutation.Incr(key, delta, dflt, create));
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    return (Double) once(new Mutation.IncrDouble(key, delta, dflt));
  }

  @Override
  public Number get(String key) {
    return store.get(key);
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    once(new Mutation.Put(key, value, ttlNanos));
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return (Boolean) once(new Mutation.Add(key, value, ttlNanos));
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    return (Number) once(new Mutation.Pop(key, integerOnly));
  }

  @Override
  public boolean delete(String key) {
    return (Boolean) once(new Mutation.Delete(key));
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    return (Boolean) once(new Mutation.Touch(key, ttlNanos));
  }

  @Override
  public long ttl(String key) {
    return store.ttl(key);
  }

  @Override
  public List<String> keys(String prefix) {
    return store.keys(prefix);
  }

  @Override
  public Number[] transact(List<TxOp> ops) {
    return (Number[]) once(new Mutation.Transact(ops));
  }

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    if (operation == LimiterOperation.PEEK) {
      return store.limit(call, operation, permits);
    }
    return (Decision) once(new Mutation.LimiterStep(call, operation, permits));
  }

  @Override
  public Object applyOnce(OperationId other, Mutation mutation) {
    return store.applyOnce(other, mutation);
  }

  @Override
  public boolean blocking() {
    return store.blocking();
  }

  @Override
  public void close() {
    // The view owns nothing: the Tally closes the store.
  }

  /** The asynchronous twin. */
  static final class Async implements AsyncStore {
    private final AsyncStore store;
    private final OperationId id;

    Async(AsyncStore store, OperationId id) {
      this.store = store;
      this.id = id;
    }

    @SuppressWarnings("unchecked")
    private <T> CompletionStage<T> once(Mutation m) {
      return store.applyOnce(id, m).thenApply(r -> (T) r);
    }

    @Override
    public CompletionStage<Long> incr(String key, long delta, long dflt, boolean create) {
      return once(new Mutation.Incr(key, delta, dflt, create));
    }

    @Override
    public CompletionStage<Double> incrDouble(String key, double delta, double dflt) {
      return once(new Mutation.IncrDouble(key, delta, dflt));
    }

    @Override
    public CompletionStage<Number> get(String key) {
      return store.get(key);
    }

    @Override
    public CompletionStage<Void> put(String key, Number value, long ttlNanos) {
      return once(new Mutation.Put(key, value, ttlNanos));
    }

    @Override
    public CompletionStage<Boolean> add(String key, Number value, long ttlNanos) {
      return once(new Mutation.Add(key, value, ttlNanos));
    }

    @Override
    public CompletionStage<Number> pop(String key, boolean integerOnly) {
      return once(new Mutation.Pop(key, integerOnly));
    }

    @Override
    public CompletionStage<Boolean> delete(String key) {
      return once(new Mutation.Delete(key));
    }

    @Override
    public CompletionStage<Boolean> touch(String key, long ttlNanos) {
      return once(new Mutation.Touch(key, ttlNanos));
    }

    @Override
    public CompletionStage<Long> ttl(String key) {
      return store.ttl(key);
    }

    @Override
    public CompletionStage<List<String>> keys(String prefix) {
      return store.keys(prefix);
    }

    @Override
    public CompletionStage<Number[]> transact(List<TxOp> ops) {
      return once(new Mutation.Transact(ops));
    }

    @Override
    public CompletionStage<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
      if (operation == LimiterOperation.PEEK) {
        return store.limit(call, operation, permits);
      }
      return once(new Mutation.LimiterStep(call, operation, permits));
    }

    @Override
    public CompletionStage<Object> applyOnce(OperationId other, Mutation mutation) {
      return store.applyOnce(other, mutation);
    }
  }
}
