package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.StoreUnavailableException;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterShortcut;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * A store whose first opening failed: each call opens it if it is not open yet, then runs on it.
 * {@link TallyRuntime} uses one when {@link dev.tally.Tally.Builder#deferOpen(boolean)} allows
 * a Tally to start without its store, for every store and every API alike; it sits beneath the
 * circuit breaker, so a store that stays down is tried once per probe, not on every call.
 *
 * <p>One caller at a time opens; the others fail at once with a
 * {@link StoreUnavailableException} (and their failure policy answers) rather than queue behind
 * a connection attempt. That refusal, an {@link OpenedElsewhere}, says nothing of the store's
 * health, so the circuit breaker does not count it as a failure: otherwise a few callers
 * arriving during one slow opening would open the circuit of a store that is about to answer.
 * Asynchronous calls open on the blocking executor, never on the caller's
 * thread. Once open, calls go straight to the store: one volatile read more per call.
 */
final class DeferredStore implements Store {
  private final String uri;
  private final StoreProvider provider;
  private final StoreContext context;
  private final Executor executor;
  private final ReentrantLock opening = new ReentrantLock();
  private final Async async = new Async();
  private volatile Opened opened;
  private volatile boolean closed;

  private record Opened(Store store, AsyncStore async) {}

  /** A call refused because another call is opening the store: not a failure of the store's ({@link Circuit}). */
  static final class OpenedElsewhere extends StoreUnavailableException {
    private static final long serialVersionUID = 1L;

    OpenedElsewhere(String message) {
      super(message, null);
    }
  }

  DeferredStore(String uri, StoreProvider provider, StoreContext context, Executor executor) {
    this.uri = uri;
    this.provider = provider;
    this.context = context;
    this.executor = executor;
  }

  /** Whether the store has been opened. */
  boolean isOpen() {
    return opened != null;
  }

  private Opened open() {
    Opened o = opened;
    if (o != null) {
      return o;
    }
    if (closed) {
      throw new StoreUnavailableException("the store " + schemeName() + " is closed", null);
    }
    if (!opening.tryLock()) {
      throw new OpenedElsewhere("the store " + schemeName() + " is not open yet: another call is opening it");
    }
    try {
      o = opened;
      if (o == null) {
        Store s = provider.open(uri, context);
        AsyncStore nativeAsync = s.async();
        o = new Opened(s, nativeAsync != null ? nativeAsync : new SyncStoreAdapter(s, executor));
        if (closed) {
          s.close();
          throw new StoreUnavailableException("the store " + schemeName() + " is closed", null);
        }
        opened = o;
      }
      return o;
    } finally {
      opening.unlock();
    }
  }

  private String schemeName() {
    return dev.tally.Tally.scheme(uri) + ":";
  }

  private Store store() {
    return open().store();
  }

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    return store().incr(key, delta, dflt, create);
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    return store().incrDouble(key, delta, dflt);
  }

  @Override
  public Number get(String key) {
    return store().get(key);
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    store().put(key, value, ttlNanos);
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return store().add(key, value, ttlNanos);
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    return store().pop(key, integerOnly);
  }

  @Override
  public boolean delete(String key) {
    return store().delete(key);
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    return store().touch(key, ttlNanos);
  }

  @Override
  public long ttl(String key) {
    return store().ttl(key);
  }

  @Override
  public List<String> keys(String prefix) {
    return store().keys(prefix);
  }

  @Override
  public Number[] transact(List<TxOp> ops) {
    return store().transact(ops);
  }

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    return store().limit(call, operation, permits);
  }

  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    return store().concurrency(call);
  }

  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    return store().limitAll(calls, permitsEach);
  }

  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return store().applyOnce(id, mutation);
  }

  /** The store's shortcut once it is open; before, none (the handle goes through {@link #limit}). */
  @Override
  public LimiterShortcut shortcut(LimiterCall call) {
    Opened o = opened;
    return o == null ? null : o.store().shortcut(call);
  }

  @Override
  public boolean blocking() {
    return true;
  }

  @Override
  public AsyncStore async() {
    return async;
  }

  @Override
  public void close() {
    closed = true;
    opening.lock();
    try {
      Opened o = opened;
      if (o != null) {
        o.store().close();
      }
    } finally {
      opening.unlock();
    }
  }

  /** The asynchronous side: the opened store's own, after an opening on the executor if needed. */
  private final class Async implements AsyncStore {
    private <T> CompletionStage<T> call(Function<AsyncStore, CompletionStage<T>> op) {
      Opened o = opened;
      if (o != null) {
        return op.apply(o.async());
      }
      CompletableFuture<Opened> ready;
      try {
        ready = CompletableFuture.supplyAsync(DeferredStore.this::open, executor);
      } catch (RuntimeException rejected) { // the executor is shut down: the Tally is closed
        return CompletableFuture.failedFuture(new StoreUnavailableException("the store is closed", rejected));
      }
      return ready.thenCompose(opened -> op.apply(opened.async()));
    }

    @Override
    public CompletionStage<Long> incr(String key, long delta, long dflt, boolean create) {
      return call(a -> a.incr(key, delta, dflt, create));
    }

    @Override
    public CompletionStage<Double> incrDouble(String key, double delta, double dflt) {
      return call(a -> a.incrDouble(key, delta, dflt));
    }

    @Override
    public CompletionStage<Number> get(String key) {
      return call(a -> a.get(key));
    }

    @Override
    public CompletionStage<Void> put(String key, Number value, long ttlNanos) {
      return call(a -> a.put(key, value, ttlNanos));
    }

    @Override
    public CompletionStage<Boolean> add(String key, Number value, long ttlNanos) {
      return call(a -> a.add(key, value, ttlNanos));
    }

    @Override
    public CompletionStage<Number> pop(String key, boolean integerOnly) {
      return call(a -> a.pop(key, integerOnly));
    }

    @Override
    public CompletionStage<Boolean> delete(String key) {
      return call(a -> a.delete(key));
    }

    @Override
    public CompletionStage<Boolean> touch(String key, long ttlNanos) {
      return call(a -> a.touch(key, ttlNanos));
    }

    @Override
    public CompletionStage<Long> ttl(String key) {
      return call(a -> a.ttl(key));
    }

    @Override
    public CompletionStage<List<String>> keys(String prefix) {
      return call(a -> a.keys(prefix));
    }

    @Override
    public CompletionStage<Number[]> transact(List<TxOp> ops) {
      return call(a -> a.transact(ops));
    }

    @Override
    public CompletionStage<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
      return call(a -> a.limit(call, operation, permits));
    }

    @Override
    public CompletionStage<Decision[]> limitAll(List<LimiterCall> calls, long permitsEach) {
      return call(a -> a.limitAll(calls, permitsEach));
    }

    @Override
    public CompletionStage<Object> applyOnce(OperationId id, Mutation mutation) {
      return call(a -> a.applyOnce(id, mutation));
    }
  }
}
