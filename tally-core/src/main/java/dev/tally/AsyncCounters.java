package dev.tally;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * {@link Counters} with every operation returning a {@link CompletionStage}, for event loops and
 * reactive code. Network stores implement it natively (no thread per call); in-process stores
 * complete the stage before returning. Semantics, failure policy and exceptions are those of the
 * {@link Counters} method of the same name; store and semantic failures complete the stage
 * exceptionally, while invalid arguments are thrown at once, before anything is sent.
 *
 * <pre>{@code
 * tally.counters("views").async()
 *     .incr("episode:512")
 *     .thenAccept(views -> log.info("{} views", views));
 * }</pre>
 */
public interface AsyncCounters {

  /** The synchronous view of the same counters. */
  Counters sync();

  /** The asynchronous form of {@link Counters#withOperationId}. */
  AsyncCounters withOperationId(String id);

  /** @see Counters#incr(String) */
  CompletionStage<Long> incr(String key);

  /** @see Counters#incr(String, long) */
  CompletionStage<Long> incr(String key, long delta);

  /** @see Counters#incr(String, long, long) */
  CompletionStage<Long> incr(String key, long delta, long dflt);

  /** @see Counters#incrExisting(String, long) */
  CompletionStage<Long> incrExisting(String key, long delta);

  /** @see Counters#decr(String) */
  CompletionStage<Long> decr(String key);

  /** @see Counters#decr(String, long) */
  CompletionStage<Long> decr(String key, long delta);

  /** @see Counters#decr(String, long, long) */
  CompletionStage<Long> decr(String key, long delta, long dflt);

  /** @see Counters#decrExisting(String, long) */
  CompletionStage<Long> decrExisting(String key, long delta);

  /** @see Counters#incr(String, long, long, Bounds) */
  CompletionStage<BoundedResult> incr(String key, long delta, long dflt, Bounds bounds);

  /** @see Counters#decr(String, long, long, Bounds) */
  CompletionStage<BoundedResult> decr(String key, long delta, long dflt, Bounds bounds);

  /** @see Counters#incr(String, double, double) */
  CompletionStage<Double> incr(String key, double delta, double dflt);

  /** @see Counters#incr(String, double) */
  CompletionStage<Double> incr(String key, double delta);

  /** @see Counters#get(String) */
  CompletionStage<OptionalLong> get(String key);

  /** @see Counters#getDouble(String) */
  CompletionStage<OptionalDouble> getDouble(String key);

  /** @see Counters#put(String, long) */
  CompletionStage<Void> put(String key, long value);

  /** @see Counters#put(String, long, Duration) */
  CompletionStage<Void> put(String key, long value, Duration ttl);

  /** @see Counters#put(String, double, Duration) */
  CompletionStage<Void> put(String key, double value, Duration ttl);

  /** @see Counters#add(String, long, Duration) */
  CompletionStage<Boolean> add(String key, long value, Duration ttl);

  /** {@link Counters#add(String, long)}: sets with no expiry, only if missing. */
  default CompletionStage<Boolean> add(String key, long value) {
    return add(key, value, null);
  }

  /** @see Counters#add(String, double, Duration) */
  CompletionStage<Boolean> add(String key, double value, Duration ttl);

  /** @see Counters#pop(String) */
  CompletionStage<OptionalLong> pop(String key);

  /** @see Counters#popDouble(String) */
  CompletionStage<OptionalDouble> popDouble(String key);

  /** @see Counters#delete(String) */
  CompletionStage<Boolean> delete(String key);

  /** @see Counters#touch(String, Duration) */
  CompletionStage<Boolean> touch(String key, Duration ttl);

  /** @see Counters#ttl(String) */
  CompletionStage<Optional<Duration>> ttl(String key);

  /** @see Counters#expiry */
  CompletionStage<Expiry> expiry(String key);

  /** @see Counters#keys(String) */
  CompletionStage<List<String>> keys(String prefix);

  /** @see Counters#transaction(Consumer) */
  CompletionStage<TransactionResult> transaction(Consumer<Transaction> operations);
}
