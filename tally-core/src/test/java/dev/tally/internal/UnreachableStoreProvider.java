package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.StoreUnavailableException;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import dev.tally.spi.TxOp;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code unreachable:} — a store whose backend is always down, the way a network store reports
 * an outage. Found through {@code ServiceLoader}, so it also proves that plug-in stores load.
 */
public final class UnreachableStoreProvider implements StoreProvider {
  static final AtomicInteger CALLS = new AtomicInteger();

  /** For {@code ServiceLoader}. */
  public UnreachableStoreProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("unreachable");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    return new Store() {
      private StoreUnavailableException down() {
        CALLS.incrementAndGet();
        return new StoreUnavailableException("connection refused: " + uri, null);
      }

      @Override public long incr(String key, long delta, long dflt, boolean create) { throw down(); }
      @Override public double incrDouble(String key, double delta, double dflt) { throw down(); }
      @Override public Number get(String key) { throw down(); }
      @Override public void put(String key, Number value, long ttlNanos) { throw down(); }
      @Override public boolean add(String key, Number value, long ttlNanos) { throw down(); }
      @Override public Number pop(String key, boolean integerOnly) { throw down(); }
      @Override public boolean delete(String key) { throw down(); }
      @Override public boolean touch(String key, long ttlNanos) { throw down(); }
      @Override public long ttl(String key) { throw down(); }
      @Override public List<String> keys(String prefix) { throw down(); }
      @Override public Number[] transact(List<TxOp> ops) { throw down(); }
      @Override public Decision limit(LimiterCall call, LimiterOperation op, long permits) { throw down(); }
      @Override public void close() {}
    };
  }
}
