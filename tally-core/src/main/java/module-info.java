/**
 * Tally's API ({@code dev.tally}: {@code Tally}, counters, limiters, their values and errors) and
 * the contract a store implements ({@code dev.tally.spi}). Everything else is package-private.
 * Stores are found with {@link java.util.ServiceLoader}.
 */
module dev.tally {
  requires static micrometer.core; // TallyMetrics, only when the application has Micrometer

  exports dev.tally;
  exports dev.tally.spi;

  uses dev.tally.spi.StoreProvider;
  provides dev.tally.spi.StoreProvider with dev.tally.BuiltInStores;
}
