package dev.tally;

import dev.tally.spi.Store;

/** Reaches the store behind a {@link Tally}, for store modules' tests. */
public final class TallyAccess {
  private TallyAccess() {}

  public static Store store(Tally tally) {
    return tally.store();
  }
}
