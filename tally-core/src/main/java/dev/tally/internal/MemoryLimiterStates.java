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
   * The limiter state under {@code key}: its decision instant, its expiry, then its words; null
   * if none.
   *
   * @throws IllegalArgumentException if {@code store} is not a {@code mem:} store
   */
  public static long[] read(Store store, String key) {
    if (!(store instanceof MemoryStore m)) {
      throw new IllegalArgumentException("not a mem: store: " + store);
    }
    return m.limiters().state(key);
  }
}
