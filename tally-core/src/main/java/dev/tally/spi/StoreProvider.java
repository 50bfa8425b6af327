package dev.tally.spi;

import java.util.Set;

/**
 * Opens stores for the URI schemes it names. Store modules register an implementation in
 * {@code META-INF/services/dev.tally.spi.StoreProvider}; {@link dev.tally.Tally#open} finds it
 * with {@link java.util.ServiceLoader} when the module is on the class path.
 */
public interface StoreProvider {

  /** The URI schemes this provider opens, e.g. {@code redis}, {@code rediss}. */
  Set<String> schemes();

  /**
   * Opens a store.
   *
   * @param uri the whole URI as the user wrote it, e.g. {@code file:./tally-data?sync=always}
   * @param context the clock and executor to use
   * @throws IllegalArgumentException if the URI is malformed, saying what a good one looks like
   */
  Store open(String uri, StoreContext context);
}
