package dev.tally.internal;

import dev.tally.Tally;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.Set;

/**
 * Opens the two stores that come with the core, {@code mem:} and {@code null:}, found like every
 * other store through {@code META-INF/services}: the entry point names no store.
 */
public final class BuiltInStores implements StoreProvider {
  /** For {@link java.util.ServiceLoader}; applications open stores with {@link Tally#open}. */
  public BuiltInStores() {}


  @Override
  public Set<String> schemes() {
    return Set.of("mem", "null");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    if (uri.startsWith("mem:")) {
      requireNoOptions(uri, "mem:");
      return new MemoryStore(context.timeSource(), context.operationRetentionNanos());
    }
    requireNoOptions(uri, "null:");
    return new NullStore();
  }

  private static void requireNoOptions(String uri, String expected) {
    if (!uri.equals(expected)) {
      throw new IllegalArgumentException("store URI '" + uri + "' takes no options; write '"
          + expected + "'");
    }
  }
}
