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
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * A store behind its {@link Circuit}: every call is admitted by the circuit first (or refused
 * at once with a {@link StoreUnavailableException}, without reaching the store) and reports how
 * it ended. {@link TallyRuntime} puts the opened store behind one when a circuit breaker is
 * configured, beneath everything else, so that each operation of every API (counters, groups,
 * limiters and their shortcuts, transactions, operation ids; synchronous and {@link Async
 * asynchronous}) passes the circuit exactly once.
 *
 * <p>The synchronous methods are written out rather than passed as lambdas to one helper: a
 * lambda capturing the arguments, and the boxing of a {@code long} result, would cost an
 * allocation per call on stores whose calls allocate nothing (the {@code mem:} store's
 * limiter shortcut is one compare-and-set).
 */
final class CircuitBreakerStore implements Store {
  private final Store store;
  private final Circuit circuit;

  CircuitBreakerStore(Store store, Circuit circuit) {
    this.store = store;
    this.circuit = circuit;
  }

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    Circuit.State admitted = circuit.admit();
    long result;
    try {
      result = store.incr(key, delta, dflt, create);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    Circuit.State admitted = circuit.admit();
    double result;
    try {
      result = store.incrDouble(key, delta, dflt);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public Number get(String key) {
    Circuit.State admitted = circuit.admit();
    Number result;
    try {
      result = store.get(key);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    Circuit.State admitted = circuit.admit();
    try {
      store.put(key, value, ttlNanos);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    Circuit.State admitted = circuit.admit();
    boolean result;
    try {
      result = store.add(key, value, ttlNanos);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    return guarded(() -> store.pop(key, integerOnly));
  }

  @Override
  public boolean delete(String key) {
    Circuit.State admitted = circuit.admit();
    boolean result;
    try {
      result = store.delete(key);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    Circuit.State admitted = circuit.admit();
    boolean result;
    try {
      result = store.touch(key, ttlNanos);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public long ttl(String key) {
    Circuit.State admitted = circuit.admit();
    long result;
    try {
      result = store.ttl(key);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public List<String> keys(String prefix) {
    return guarded(() -> store.keys(prefix));
  }

  @Override
  public Number[] transact(List<TxOp> ops) {
    return guarded(() -> store.transact(ops));
  }

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    Circuit.State admitted = circuit.admit();
    Decision result;
    try {
      result = store.limit(call, operation, permits);
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    return guarded(() -> store.concurrency(call));
  }

  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    return guarded(() -> store.limitAll(calls, permitsEach));
  }

  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return guarded(() -> store.applyOnce(id, mutation));
  }

  /** The store's shortcut, if it has one, behind the circuit like every other call. */
  /**
   * Runs {@code op} through the circuit. The calls on a hot path (increments, reads, limiter
   * steps) write this out instead, so that they allocate no lambda and box no result.
   */
  private <T> T guarded(java.util.function.Supplier<T> op) {
    Circuit.State admitted = circuit.admit();
    T result;
    try {
      result = op.get();
    } catch (RuntimeException | Error e) {
      circuit.ended(admitted, e);
      throw e;
    }
    circuit.answered(admitted);
    return result;
  }

  @Override
  public LimiterShortcut shortcut(LimiterCall call) {
    LimiterShortcut inner = store.shortcut(call);
    if (inner == null) {
      return null;
    }
    return permits -> {
      Circuit.State admitted = circuit.admit();
      boolean granted;
      try {
        granted = inner.tryAcquire(permits);
      } catch (RuntimeException | Error e) {
        circuit.ended(admitted, e);
        throw e;
      }
      circuit.answered(admitted);
      return granted;
    };
  }

  @Override
  public boolean blocking() {
    return store.blocking();
  }

  /** None: {@link TallyRuntime} puts the store's asynchronous form behind {@link Async} itself. */
  @Override
  public AsyncStore async() {
    return null;
  }

  @Override
  public void close() {
    store.close();
  }

  /** The asynchronous twin, sharing the synchronous side's circuit. */
  static final class Async implements AsyncStore {
    private final AsyncStore store;
    private final Circuit circuit;

    Async(AsyncStore store, Circuit circuit) {
      this.store = store;
      this.circuit = circuit;
    }

    /**
     * Admits {@code op} or fails at once; reports how its stage ended. A stage completed
     * already (an inline store's answer) is reported now and returned as it is; otherwise the
     * stage returned completes after the circuit has heard of it, so what runs next sees the
     * circuit's new state.
     */
    private <T> CompletionStage<T> call(Supplier<CompletionStage<T>> op) {
      Circuit.State admitted;
      try {
        admitted = circuit.admit();
      } catch (StoreUnavailableException refused) {
        return CompletableFuture.failedFuture(refused);
      }
      CompletionStage<T> stage;
      try {
        stage = op.get();
      } catch (RuntimeException | Error e) { // a store that throws instead of failing the stage
        circuit.ended(admitted, e);
        throw e;
      }
      if (stage instanceof CompletableFuture<T> f && f.isDone() && !f.isCompletedExceptionally()) {
        circuit.answered(admitted);
        return stage;
      }
      return stage.whenComplete((result, failure) -> {
        if (failure == null) {
          circuit.answered(admitted);
        } else {
          circuit.ended(admitted, failure instanceof CompletionException && failure.getCause() != null
              ? failure.getCause() : failure);
        }
      });
    }

    @Override
    public CompletionStage<Long> incr(String key, long delta, long dflt, boolean create) {
      return call(() -> store.incr(key, delta, dflt, create));
    }

    @Override
    public CompletionStage<Double> incrDouble(String key, double delta, double dflt) {
      return call(() -> store.incrDouble(key, delta, dflt));
    }

    @Override
    public CompletionStage<Number> get(String key) {
      return call(() -> store.get(key));
    }

    @Override
    public CompletionStage<Void> put(String key, Number value, long ttlNanos) {
      return call(() -> store.put(key, value, ttlNanos));
    }

    @Override
    public CompletionStage<Boolean> add(String key, Number value, long ttlNanos) {
      return call(() -> store.add(key, value, ttlNanos));
    }

    @Override
    public CompletionStage<Number> pop(String key, boolean integerOnly) {
      return call(() -> store.pop(key, integerOnly));
    }

    @Override
    public CompletionStage<Boolean> delete(String key) {
      return call(() -> store.delete(key));
    }

    @Override
    public CompletionStage<Boolean> touch(String key, long ttlNanos) {
      return call(() -> store.touch(key, ttlNanos));
    }

    @Override
    public CompletionStage<Long> ttl(String key) {
      return call(() -> store.ttl(key));
    }

    @Override
    public CompletionStage<List<String>> keys(String prefix) {
      return call(() -> store.keys(prefix));
    }

    @Override
    public CompletionStage<Number[]> transact(List<TxOp> ops) {
      return call(() -> store.transact(ops));
    }

    @Override
    public CompletionStage<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
      return call(() -> store.limit(call, operation, permits));
    }

    @Override
    public CompletionStage<Decision[]> limitAll(List<LimiterCall> calls, long permitsEach) {
      return call(() -> store.limitAll(calls, permitsEach));
    }

    @Override
    public CompletionStage<Object> applyOnce(OperationId id, Mutation mutation) {
      return call(() -> store.applyOnce(id, mutation));
    }
  }
}
