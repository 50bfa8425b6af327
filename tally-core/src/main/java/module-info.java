/**
 * Tally's API ({@code dev.tally}: {@code Tally}, counters, limiters, their values and errors) and
 * the contract a store implements ({@code dev.tally.spi}); the implementation
 * ({@code dev.tally.internal}: the counters, limiters and the built-in stores) is not exported.
 * Stores are found with {@link java.util.ServiceLoader}.
 */
@SuppressWarnings("module") // the kit's module, exported to, is built after this one
module dev.tally {
  requires static micrometer.core; // TallyMetrics, only when the application has Micrometer

  exports dev.tally;
  exports dev.tally.spi;
  exports dev.tally.http; // HTTP renderings of decisions, shared by the starter and the server
  // The implementation is for the conformance kit's reference checks only (a store's own tests
  // compare its decisions with the Java limiter machine); applications see the API and the SPI.
  exports dev.tally.internal to dev.tally.tck;

  uses dev.tally.Tally.Implementation;
  uses dev.tally.spi.StoreProvider;
  provides dev.tally.Tally.Implementation with dev.tally.internal.TallyRuntime.Provider;
  provides dev.tally.spi.StoreProvider with dev.tally.internal.BuiltInStores;
}
