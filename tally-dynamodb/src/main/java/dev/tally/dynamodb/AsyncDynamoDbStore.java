package dev.tally.dynamodb;

import dev.tally.Decision;
import dev.tally.StoreTimeoutException;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The store with a non-blocking asynchronous API, used when an async HTTP client
 * (netty-nio-client or aws-crt-client) is on the class path: each operation's {@link Exchange}
 * runs on {@code DynamoDbAsyncClient} futures instead of a blocked thread. Rate limiters, which
 * take turns per key in this process, run their blocking form on Tally's executor.
 */
final class AsyncDynamoDbStore implements AsyncStore {
  private final DynamoDbStore store;
  private final Options options;
  private final Table table;
  private final Executor blocking;

  AsyncDynamoDbStore(DynamoDbStore store, StoreContext context) {
    this.store = store;
    this.options = store.options;
    this.table = store.table;
    this.blocking = context.blockingExecutor();
  }

  private <T> CompletableFuture<T> async(Supplier<Exchange<T>> exchange) {
    return this.<T, Exchange<T>, T>async(exchange, Exchange::result);
  }

  private <T, X extends Exchange<T>, R> CompletableFuture<R> async(Supplier<X> exchange, Function<X, R> result) {
    try {
      store.checkOpen();
      X x = exchange.get();
      return store.counters.runAsync(x, Deadline.start(options)).thenApply(ignored -> result.apply(x));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  @Override
  public CompletionStage<Long> incr(String key, long delta, long dflt, boolean create) {
    return async(() -> store.incrExchange(key, delta, dflt, create));
  }

  @Override
  public CompletionStage<Double> incrDouble(String key, double delta, double dflt) {
    return async(() -> store.incrDoubleExchange(key, delta, dflt));
  }

  @Override
  public CompletionStage<Number> get(String key) {
    if (options.sharded(key)) {
      return async(() -> new ShardedExchanges.Sum(table, key, options.shards()), x -> (Number) x.result());
    }
    return async(() -> new CounterExchanges.Get(table, key), CounterExchanges.Get::value);
  }

  @Override
  public CompletionStage<Void> put(String key, Number value, long ttlNanos) {
    return async(() -> store.putExchange(key, value, ttlNanos));
  }

  @Override
  public CompletionStage<Boolean> add(String key, Number value, long ttlNanos) {
    return async(() -> store.addExchange(key, value, ttlNanos));
  }

  @Override
  public CompletionStage<Number> pop(String key, boolean integerOnly) {
    if (options.sharded(key)) {
      return async(() -> new ShardedExchanges.PopAll(table, key, options.shards()), x -> (Number) x.result());
    }
    return async(() -> new CounterExchanges.Delete(table, key, integerOnly));
  }

  @Override
  public CompletionStage<Boolean> delete(String key) {
    if (options.sharded(key)) {
      return async(() -> new ShardedExchanges.PopAll(table, key, options.shards()), x -> x.result() != null);
    }
    return async(() -> new CounterExchanges.Delete(table, key, false), CounterExchanges.Delete::wasLive);
  }

  @Override
  public CompletionStage<Boolean> touch(String key, long ttlNanos) {
    return async(() -> store.touchExchange(key, ttlNanos));
  }

  @Override
  public CompletionStage<Long> ttl(String key) {
    if (options.sharded(key)) {
      return get(key).thenApply(v -> v == null ? Store.TTL_MISSING : Store.TTL_PERMANENT);
    }
    return async(() -> new CounterExchanges.Get(table, key), CounterExchanges.Get::ttl);
  }

  @Override
  public CompletionStage<List<String>> keys(String prefix) {
    return async(() -> store.keysExchange(prefix));
  }

  @Override
  public CompletionStage<Number[]> transact(List<TxOp> ops) {
    // Transactions take this process's per-key turns, which a non-blocking chain cannot hold.
    // The deadline starts now: a wait for the executor is part of the call.
    Deadline deadline = Deadline.start(options);
    return CompletableFuture.supplyAsync(() -> store.transact(ops, deadline), blocking);
  }

  @Override
  public CompletionStage<Object> applyOnce(OperationId id, Mutation mutation) {
    if (mutation instanceof Mutation.LimiterStep || mutation instanceof Mutation.Transact) {
      // These take this process's per-key turns, which a non-blocking chain cannot hold.
      Deadline deadline = Deadline.start(options);
      return CompletableFuture.supplyAsync(() -> store.applyOnce(id, mutation, deadline), blocking);
    }
    try {
      store.checkOpen();
      Once once = store.once(id, mutation);
      Exchange<?> x = store.onceExchange(once);
      Deadline deadline = Deadline.start(options); // the claim and the write share it
      return store.counters.runAsync(new OnceExchanges.Claim(table, once), deadline)
          .thenCompose(claimed -> store.counters.runAsync(x, deadline)
              .thenApply(r -> (Object) r)
              .exceptionallyCompose(failure -> releaseOnRefusal(once, deadline, failure)))
          .handle((r, failure) -> {
            if (failure == null) {
              return r;
            }
            Throwable f = Errors.unwrap(failure);
            throw f instanceof StoreTimeoutException t ? DynamoDbStore.retrySafe(t, id)
                : f instanceof RuntimeException re ? re : new CompletionException(f);
          });
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** A refusal gives the claim back ({@link OnceExchanges.Release}); the failure stands either way. */
  private CompletionStage<Object> releaseOnRefusal(Once once, Deadline deadline, Throwable failure) {
    Throwable f = Errors.unwrap(failure);
    if (!OnceExchanges.Release.appliedNothing(f)) {
      return CompletableFuture.failedFuture(f);
    }
    return store.counters.runAsync(new OnceExchanges.Release(table, once), deadline)
        .handle((released, e) -> {
          if (e != null) {
            f.addSuppressed(e); // the claim then lapses with the id's retention
          }
          throw (RuntimeException) f;
        });
  }

  @Override
  public CompletionStage<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
    Deadline deadline = Deadline.start(options);
    return CompletableFuture.supplyAsync(() -> store.limit(call, operation, permits, null, deadline), blocking);
  }

  @Override
  public CompletionStage<Decision[]> limitAll(List<LimiterCall> calls, long permitsEach) {
    Deadline deadline = Deadline.start(options);
    return CompletableFuture.supplyAsync(() -> store.limitAll(calls, permitsEach, deadline), blocking);
  }
}
