package dev.tally.spi;

import dev.tally.Decision;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The asynchronous form of {@link Store}, for stores with a non-blocking client (Lettuce, the
 * AWS SDK's async client), handed to Tally by {@link Store#async()}. A store that has none is
 * adapted by Tally: its calls run inline when it is not {@link Store#blocking() blocking}, on an
 * executor otherwise (and {@code keys}, a scan, always on the executor).
 * Each method has the semantics of its {@link Store} namesake; failures complete the stage
 * exceptionally with the same exceptions.
 */
public interface AsyncStore {

  /** @see Store#incr */
  CompletionStage<Long> incr(String key, long delta, long dflt, boolean create);

  /** @see Store#incrDouble */
  CompletionStage<Double> incrDouble(String key, double delta, double dflt);

  /** @see Store#get */
  CompletionStage<Number> get(String key);

  /** @see Store#put */
  CompletionStage<Void> put(String key, Number value, long ttlNanos);

  /** @see Store#add */
  CompletionStage<Boolean> add(String key, Number value, long ttlNanos);

  /** @see Store#pop */
  CompletionStage<Number> pop(String key, boolean integerOnly);

  /** @see Store#delete */
  CompletionStage<Boolean> delete(String key);

  /** @see Store#touch */
  CompletionStage<Boolean> touch(String key, long ttlNanos);

  /** @see Store#ttl */
  CompletionStage<Long> ttl(String key);

  /** @see Store#keys */
  CompletionStage<List<String>> keys(String prefix);

  /** @see Store#transact */
  CompletionStage<Number[]> transact(List<TxOp> ops);

  /** @see Store#limit */
  CompletionStage<Decision> limit(LimiterCall call, LimiterOperation operation, long permits);

  /** @see Store#limitAll */
  default CompletionStage<Decision[]> limitAll(List<LimiterCall> calls, long permitsEach) {
    return CompletableFuture.failedFuture(JointLimit.unsupported(getClass().getSimpleName()));
  }

  /** @see Store#applyOnce */
  default CompletionStage<Object> applyOnce(OperationId id, Mutation mutation) {
    return CompletableFuture.failedFuture(new UnsupportedOperationException(
        getClass().getSimpleName() + " does not support operation ids"));
  }
}
