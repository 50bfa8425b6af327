package dev.tally.internal;

import dev.tally.Decision;
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
 * the caller's thread (perhaps an event loop) is never held. {@link #keys} runs on the executor
 * for every store: it scans the whole store, which takes as long as the store is large.
 */
final class SyncStoreAdapter implements AsyncStore {
  private final Store store;
  private final Executor executor;
  private final boolean inline;

  SyncStoreAdapter(Store store, Executor executor) {
    this.store = store;
    this.executor = executor;
    this.inline = !store.blocking();
  }

  private <T> CompletionStage<T> run(Supplier<T> op) {
    return inline ? now(op) : CompletableFuture.supplyAsync(op, executor);
  }

  private static <T> CompletionStage<T> now(Supplier<T> op) {
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
    return CompletableFuture.supplyAsync(() -> store.keys(prefix), executor);
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
  public CompletionStage<Decision[]> limitAll(List<LimiterCall> calls, long permitsEach) {
    return run(() -> store.limitAll(calls, permitsEach));
  }

  @Override
  public CompletionStage<Object> applyOnce(OperationId id, Mutation mutation) {
    return run(() -> store.applyOnce(id, mutation));
  }
}
