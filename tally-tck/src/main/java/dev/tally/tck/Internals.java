package dev.tally.tck;

import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.internal.LimiterMachine;
import dev.tally.internal.TallyRuntime;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.Store;
import java.util.List;

/**
 * What a store's own white-box tests need from behind the API: the store an open {@link Tally}
 * runs on, and the Java limiter machine that every store's decisions must equal (a script or a
 * database function is checked against it). tally-core exports its implementation to this kit
 * only, so these two are the whole of what a store's tests reach.
 */
public final class Internals {
  private Internals() {}

  /**
   * The store behind {@code tally}: calls on it bypass validation, key prefixes and failure
   * policies.
   *
   * @throws IllegalArgumentException if {@code tally} is not one that {@link Tally#open} opened
   */
  public static Store storeOf(Tally tally) {
    if (tally instanceof TallyRuntime runtime) {
      return runtime.store();
    }
    throw new IllegalArgumentException("not a Tally opened by Tally.open or Tally.builder: " + tally);
  }

  /** The reference limiter machine for {@code key} with {@code limits}, in their order. */
  public static LimiterCall referenceLimiter(String key, List<Limit> limits) {
    return LimiterMachine.of(key, limits);
  }

  /** The reference limiter machine for {@code key} with {@code limits} of {@code version}. */
  public static LimiterCall referenceLimiter(String key, List<Limit> limits, long version) {
    return LimiterMachine.of(key, limits, version);
  }
}
