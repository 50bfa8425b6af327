package dev.tally.redis;

import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.Decision;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.TxOp;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The blocking face of {@link AsyncRedisStore}: each call waits for its asynchronous twin.
 *
 * <p>Lettuce times every command out by itself; the wait here is bounded too (by the timeout
 * plus half a second, from the call's start), so a caller never hangs even if a completion were
 * lost, nor waits much past its timeout when its command went out late (behind a shared
 * {@code INCRBY} that timed out first, or a {@code WAIT} for replicas). {@link #keys} is the
 * exception: it is many {@code SCAN} calls, each under the command timeout. A lone caller spins
 * briefly before it parks ({@link ReplyWait}).
 */
final class RedisStore implements Store {
  private static final Duration SLACK = Duration.ofMillis(500);

  private final String uri;
  private final RedisConnection connection;
  private final AsyncRedisStore async;
  private final long waitNanos;
  private final ReplyWait replies;
  private final AtomicBoolean closed = new AtomicBoolean();

  RedisStore(String uri, RedisConnection connection, StoreContext context, RedisSettings settings) {
    this.uri = uri;
    this.connection = connection;
    Handoff handoff = new Handoff();
    this.async = new AsyncRedisStore(connection, context, settings, handoff);
    this.waitNanos = connection.timeout().plus(SLACK).toNanos();
    this.replies = new ReplyWait(settings.spinWait, handoff);
  }

  private <T> T await(CompletionStage<T> stage) {
    return await(stage, waitNanos);
  }

  private <T> T await(CompletionStage<T> stage, long nanos) {
    try {
      return replies.get(stage.toCompletableFuture(), nanos);
    } catch (ExecutionException e) {
      Throwable cause = RedisFailures.unwrap(e);
      if (cause instanceof RuntimeException r) {
        throw r; // already translated by AsyncRedisStore
      }
      throw new StoreException("Redis call failed: " + cause, cause);
    } catch (TimeoutException e) {
      throw new StoreTimeoutException("no answer from Redis within " + Duration.ofNanos(nanos)
          + "; the operation may or may not have been applied", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreException("interrupted while waiting for Redis; the operation may or may not"
          + " have been applied", e);
    }
  }

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    return await(async.incrShared(key, delta, dflt, create));
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    return await(async.incrDouble(key, delta, dflt));
  }

  @Override
  public Number get(String key) {
    return await(async.get(key));
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    await(async.put(key, value, ttlNanos));
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return await(async.add(key, value, ttlNanos));
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    return await(async.pop(key, integerOnly));
  }

  @Override
  public boolean delete(String key) {
    return await(async.delete(key));
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    return await(async.touch(key, ttlNanos));
  }

  @Override
  public long ttl(String key) {
    return await(async.ttl(key));
  }

  @Override
  public List<String> keys(String prefix) {
    return await(async.keys(prefix), Long.MAX_VALUE);
  }

  @Override
  public Number[] transact(List<TxOp> ops) {
    return await(async.transact(ops));
  }

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    return await(async.limit(call, operation, permits, true));
  }

  /** One step of a concurrency limit: {@code concurrency.lua}, see {@link AsyncRedisStore#concurrency}. */
  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    return await(async.concurrency(call));
  }

  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    return await(async.limitAll(calls, permitsEach));
  }

  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return await(async.applyOnce(id, mutation));
  }

  @Override
  public AsyncStore async() {
    return async;
  }

  /** The hot-key guard, or null when it is off; for tests. */
  DenyCache denyCache() {
    return async.denyCache();
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      connection.close();
    }
  }

  @Override
  public String toString() {
    return "RedisStore[" + RedisSettings.redact(uri) + "]";
  }
}
