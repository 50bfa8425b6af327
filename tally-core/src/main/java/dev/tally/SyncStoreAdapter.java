package dev.tally;

import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * The asynchronous API for a store that only implements {@link Store}. Non-blocking stores run
 * inline and return completed stages, which costs nothing; blocking ones run on an executor so
 * the caller's thread (perhaps an event loop) is never held.
 */
final class SyncStoreAdapter implements AsyncStore {
  private final Store store;
  private final Executor executor; // null: run inline

  SyncStoreAdapter(Store store, Executor executor) {
    this.store = store;
    this.executor = store.blocking() ? executor : null;
  }

  private <T> CompletionStage<T> run(Supplier<T> op) {
    if (executor != null) {
      return CompletableFuture.supplyAsync(op, executor);
    }
    try {
      return CompletableFuture.completedFuture(op.get());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public CompletionStage<Long> incr(String key, long delta, long dflt, boolean create) {
    return run(() -> store.incr(key, delta, dflt, create));
  }

  @Override
  public CompletionStage<Double> incrDouble(String key, double delta, double dflt) {
    return run(() -> store.incrDouble(key, delta, dflt));
  }

  @Override
  public CompletionStage<Number> get(String key) {
    return run(() -> store.get(key));
  }

  @Override
  public CompletionStage<Void> put(String key, Number value, long ttlNanos) {
    return run(() -> {
      store.put(key, value, ttlNanos);
      return null;
    });
  }

  @Override
  public CompletionStage<Boolean> add(String key, Number value, long ttlNanos) {
    return run(() -> store.add(key, value, ttlNanos));
  }

  @Override
  public CompletionStage<Number> pop(String key, boolean integerOnly) {
    return run(() -> store.pop(key, integerOnly));
  }

  @Override
  public CompletionStage<Boolean> delete(String key) {
    return run(() -> store.delete(key));
  }

  @Override
  public CompletionStage<Boolean> touch(String key, long ttlNanos) {
    return run(() -> store.touch(key, ttlNanos));
  }

  @Override
  public CompletionStage<Long> ttl(String key) {
    return run(() -> store.ttl(key));
  }

  @Override
  public CompletionStage<List<String>> keys(String prefix) {
    return run(() -> store.keys(prefix));
  }

  @Override
  public CompletionStage<Number[]> transact(List<TxOp> ops) {
    return run(() -> store.transact(ops));
  }

  @Override
  public CompletionStage<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
    return run(() -> store.limit(call, operation, permits));
  }

  @Override
  public CompletionStage<Object> applyOnce(OperationId id, Mutation mutation) {
    return run(() -> store.applyOnce(id, mutation));
  }
}
