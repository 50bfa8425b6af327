package dev.tally;

import dev.tally.spi.LimiterCall;
import dev.tally.spi.Store;
import java.util.List;

/**
 * What the PostgreSQL tests need from the core's package-private parts: the reference state machine,
 * to compare the PL/pgSQL function with, and the store behind a {@link Tally}.
 */
public final class CoreAccess {
  private CoreAccess() {}

  /** tally-core's own limiter state machine for {@code limits} on {@code key}. */
  public static LimiterCall machine(String key, List<Limit> limits) {
    return new LimiterMachine(key, limits);
  }

  /** The store a {@link Tally} runs on. */
  public static Store store(Tally tally) {
    return tally.store();
  }
}
