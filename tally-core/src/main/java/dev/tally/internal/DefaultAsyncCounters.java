package dev.tally.internal;

import dev.tally.AsyncCounters;
import dev.tally.Bounds;
import dev.tally.BoundedResult;
import dev.tally.CounterBoundException;
import dev.tally.Counters;
import dev.tally.Expiry;
import dev.tally.Transaction;
import dev.tally.TransactionResult;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import java.util.function.Function;

/** {@link AsyncCounters} over an {@link AsyncStore}; the asynchronous twin of {@link DefaultCounters}. */
final class DefaultAsyncCounters implements AsyncCounters {
  private final Group group;

  DefaultAsyncCounters(Group group) {
    this.group = group;
  }

  private String key(String key) {
    return Checks.key(group.prefix(), key);
  }

  private AsyncStore store() {
    return group.asyncStore();
  }

  /** Applies the failure policy to a failed stage, answering as the null store would. */
  private <T> CompletionStage<T> guard(
      CompletionStage<T> stage, String op, String key, Function<Store, T> answer) {
    return Failures.onStoreFailure(stage, e -> {
      group.failures().answerOrThrow(group.policy(), false, op, key, e);
      return answer.apply(DefaultCounters.FAIL_OPEN_ANSWERS);
    });
  }

  @Override
  public AsyncCounters withOperationId(String id) {
    return new DefaultAsyncCounters(group.withOperationId(id));
  }

  @Override
  public Counters sync() {
    return new DefaultCounters(group);
  }

  @Override
  public CompletionStage<Long> incr(String key) {
    return incr(key, 1, 0);
  }

  @Override
  public CompletionStage<Long> incr(String key, long delta) {
    return incr(key, delta, 0);
  }

  @Override
  public CompletionStage<Long> incr(String key, long delta, long dflt) {
    String k = key(key);
    return guard(store().incr(k, delta, dflt, true), "incr", k, s -> s.incr(k, delta, dflt, true));
  }

  @Override
  public CompletionStage<BoundedResult> incr(String key, long delta, long dflt, Bounds bounds) {
    List<TxOp> ops = List.of(DefaultCounters.bounded(key(key), delta, dflt, bounds));
    return guard(store().transact(ops), "incr", ops.get(0).key(), s -> s.transact(ops))
        .handle((results, failure) -> {
          if (failure == null) {
            return DefaultCounters.boundedResult(results);
          }
          Throwable cause = failure instanceof CompletionException && failure.getCause() != null
              ? failure.getCause() : failure;
          if (cause instanceof CounterBoundException refused) {
            return new BoundedResult(false, refused.value());
          }
          throw failure instanceof CompletionException c ? c : new CompletionException(failure);
        });
  }

  @Override
  public CompletionStage<BoundedResult> decr(String key, long delta, long dflt, Bounds bounds) {
    return incr(key, DefaultCounters.negate(key, delta), dflt, bounds);
  }

  @Override
  public CompletionStage<Long> incrExisting(String key, long delta) {
    // No failure policy: fail-open cannot invent the value of a counter that must exist.
    return store().incr(key(key), delta, 0, false);
  }

  @Override
  public CompletionStage<Long> decr(String key) {
    return incr(key, -1, 0);
  }

  @Override
  public CompletionStage<Long> decr(String key, long delta) {
    return incr(key, DefaultCounters.negate(key, delta), 0);
  }

  @Override
  public CompletionStage<Long> decr(String key, long delta, long dflt) {
    return incr(key, DefaultCounters.negate(key, delta), dflt);
  }

  @Override
  public CompletionStage<Long> decrExisting(String key, long delta) {
    return incrExisting(key, DefaultCounters.negate(key, delta));
  }

  @Override
  public CompletionStage<Double> incr(String key, double delta, double dflt) {
    String k = key(key);
    Checks.finite(delta, "delta");
    Checks.finite(dflt, "default");
    return guard(store().incrDouble(k, delta, dflt), "incr", k, s -> s.incrDouble(k, delta, dflt));
  }

  @Override
  public CompletionStage<Double> incr(String key, double delta) {
    return incr(key, delta, 0.0);
  }

  @Override
  public CompletionStage<OptionalLong> get(String key) {
    String k = key(key);
    return guard(store().get(k), "get", k, s -> s.get(k)).thenApply(n -> DefaultCounters.asLong(k, n));
  }

  @Override
  public CompletionStage<OptionalDouble> getDouble(String key) {
    String k = key(key);
    return guard(store().get(k), "get", k, s -> s.get(k))
        .thenApply(n -> n == null ? OptionalDouble.empty() : OptionalDouble.of(n.doubleValue()));
  }

  @Override
  public CompletionStage<Void> put(String key, long value) {
    return put(key, (Number) value, null);
  }

  @Override
  public CompletionStage<Void> put(String key, long value, Duration ttl) {
    return put(key, (Number) value, ttl);
  }

  @Override
  public CompletionStage<Void> put(String key, double value, Duration ttl) {
    return put(key, (Number) Checks.finite(value, "value"), ttl);
  }

  private CompletionStage<Void> put(String key, Number value, Duration ttl) {
    String k = key(key);
    long ttlNanos = Checks.ttl(ttl);
    return guard(store().put(k, value, ttlNanos), "put", k, s -> null);
  }

  @Override
  public CompletionStage<Boolean> add(String key, long value, Duration ttl) {
    return add(key, (Number) value, ttl);
  }

  @Override
  public CompletionStage<Boolean> add(String key, double value, Duration ttl) {
    return add(key, (Number) Checks.finite(value, "value"), ttl);
  }

  private CompletionStage<Boolean> add(String key, Number value, Duration ttl) {
    String k = key(key);
    long ttlNanos = Checks.ttl(ttl);
    return guard(store().add(k, value, ttlNanos), "add", k, s -> s.add(k, value, ttlNanos));
  }

  @Override
  public CompletionStage<OptionalLong> pop(String key) {
    String k = key(key);
    return guard(store().pop(k, true), "pop", k, s -> s.pop(k, true))
        .thenApply(n -> DefaultCounters.asLong(k, n));
  }

  @Override
  public CompletionStage<OptionalDouble> popDouble(String key) {
    String k = key(key);
    return guard(store().pop(k, false), "pop", k, s -> s.pop(k, false))
        .thenApply(n -> n == null ? OptionalDouble.empty() : OptionalDouble.of(n.doubleValue()));
  }

  @Override
  public CompletionStage<Boolean> delete(String key) {
    String k = key(key);
    return guard(store().delete(k), "delete", k, s -> s.delete(k));
  }

  @Override
  public CompletionStage<Boolean> touch(String key, Duration ttl) {
    String k = key(key);
    long ttlNanos = Checks.ttl(ttl);
    return guard(store().touch(k, ttlNanos), "touch", k, s -> s.touch(k, ttlNanos));
  }

  @Override
  public CompletionStage<Optional<Duration>> ttl(String key) {
    String k = key(key);
    return guard(store().ttl(k), "ttl", k, s -> s.ttl(k)).thenApply(DefaultCounters::asTtl);
  }

  @Override
  public CompletionStage<Expiry> expiry(String key) {
    String k = key(key);
    return guard(store().ttl(k), "ttl", k, s -> s.ttl(k)).thenApply(DefaultCounters::expiry);
  }

  @Override
  public CompletionStage<List<String>> keys(String prefix) {
    String p = Checks.prefix(group.prefix(), prefix);
    return guard(store().keys(p), "keys", p, s -> s.keys(p)).thenApply(group::stripPrefix);
  }

  @Override
  public CompletionStage<TransactionResult> transaction(Consumer<Transaction> operations) {
    RecordingTransaction tx = new RecordingTransaction(group.prefix());
    operations.accept(tx);
    var ops = tx.close();
    return guard(store().transact(ops), "transaction", ops.get(0).key(), s -> s.transact(ops))
        .thenApply(TransactionResult::new);
  }
}
