package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
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
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code outage:} — a {@code mem:} store whose backend can be taken down, made to time out, or
 * held, the way a network store behaves in an outage; {@code outage:blocking} says it blocks, so
 * the asynchronous API runs it on the executor. Reached in tests through
 * {@code ((TallyRuntime) tally).store()}.
 */
public final class OutageStoreProvider implements StoreProvider {

  /** For {@code ServiceLoader}. */
  public OutageStoreProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("outage");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    return new OutageStore(new MemoryStore(context.timeSource(), context.operationRetentionNanos()),
        uri.equals("outage:blocking"));
  }

  /** How the backend behaves. */
  enum Mode {
    /** Answers. */
    UP,
    /** Refuses connections: {@link StoreUnavailableException}. */
    DOWN,
    /** Does not answer in time: {@link StoreTimeoutException}. */
    TIMEOUT,
    /** Throws something that says nothing about the backend (a bug). */
    BUG
  }

  /** The store; every call counts in {@link #calls} and then behaves as {@link #mode} says. */
  static final class OutageStore implements Store {
    final AtomicInteger calls = new AtomicInteger();
    volatile Mode mode = Mode.UP;
    /** When set, each call waits for it to open (after counting down {@link #entered}). */
    volatile CountDownLatch gate;
    /** Counted down by each call held at the gate; a test may set a new one before the next. */
    volatile CountDownLatch entered = new CountDownLatch(1);
    /** The keys {@link #get} was called with, in order. */
    final Queue<String> read = new ConcurrentLinkedQueue<>();

    private final MemoryStore memory;
    private final boolean blocking;

    OutageStore(MemoryStore memory, boolean blocking) {
      this.memory = memory;
      this.blocking = blocking;
    }

    private MemoryStore backend() {
      calls.incrementAndGet();
      CountDownLatch g = gate;
      if (g != null) {
        entered.countDown();
        try {
          if (!g.await(10, TimeUnit.SECONDS)) {
            throw new AssertionError("the gate was never opened");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new AssertionError(e);
        }
      }
      switch (mode) {
        case DOWN:
          throw new StoreUnavailableException("connection refused", null);
        case TIMEOUT:
          throw new StoreTimeoutException("no answer within 2 s", null);
        case BUG:
          throw new IllegalStateException("a bug in the store");
        default:
          return memory;
      }
    }

    @Override public long incr(String key, long delta, long dflt, boolean create) {
      return backend().incr(key, delta, dflt, create);
    }
    @Override public double incrDouble(String key, double delta, double dflt) {
      return backend().incrDouble(key, delta, dflt);
    }
    @Override public Number get(String key) {
      read.add(key);
      return backend().get(key);
    }
    @Override public void put(String key, Number value, long ttlNanos) { backend().put(key, value, ttlNanos); }
    @Override public boolean add(String key, Number value, long ttlNanos) { return backend().add(key, value, ttlNanos); }
    @Override public Number pop(String key, boolean integerOnly) { return backend().pop(key, integerOnly); }
    @Override public boolean delete(String key) { return backend().delete(key); }
    @Override public boolean touch(String key, long ttlNanos) { return backend().touch(key, ttlNanos); }
    @Override public long ttl(String key) { return backend().ttl(key); }
    @Override public List<String> keys(String prefix) { return backend().keys(prefix); }
    @Override public Number[] transact(List<TxOp> ops) { return backend().transact(ops); }

    @Override
    public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
      return backend().limit(call, operation, permits);
    }

    @Override
    public LimiterShortcut shortcut(LimiterCall call) {
      LimiterShortcut memoryShortcut = memory.shortcut(call);
      return memoryShortcut == null ? null : permits -> {
        backend();
        return memoryShortcut.tryAcquire(permits);
      };
    }

    @Override
    public Object applyOnce(OperationId id, Mutation mutation) {
      return backend().applyOnce(id, mutation);
    }

    @Override
    public boolean blocking() {
      return blocking;
    }

    @Override
    public void close() {
      memory.close();
    }
  }
}
