package dev.tally.internal;

import dev.tally.spi.Store;

/**
 * What a {@code mem:} store holds for a rate limiter, read from outside its package: the kit's
 * limiter vectors compare it, after every call, with what the Java machine says a memory store
 * keeps, as they compare the rows, hashes, items and file records of the other stores.
 */
public final class MemoryLimiterStates {
  private MemoryLimiterStates() {}

  /**
   * Stops {@code store}'s sweeping of full limiters (and expired counters) as new keys arrive, so
   * that what it holds is what its calls left: a sweep drops a state past its expiry whose
   * instant a clock stepping back would still decide at.
   *
   * @throws IllegalArgumentException if {@code store} is not a {@code mem:} store
   */
  public static void stopSweeping(Store store) {
    memory(store).stopSweeping();
  }

  /**
   * The limiter state under {@code key}: its decision instant, its expiry, then its words; null
   * if none.
   *
   * @throws IllegalArgumentException if {@code store} is not a {@code mem:} store
   */
  public static long[] read(Store store, String key) {
    return memory(store).limiters().state(key);
  }

  private static MemoryStore memory(Store store) {
    if (!(store instanceof MemoryStore m)) {
      throw new IllegalArgumentException("not a mem: store: " + store);
    }
    return m;
  }
}
