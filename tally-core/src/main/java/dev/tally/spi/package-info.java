/**
 * What a store implements to plug into Tally: {@link dev.tally.spi.StoreProvider} (found by
 * {@code ServiceLoader}), {@link dev.tally.spi.Store} (the atomic operations) and optionally
 * {@link dev.tally.spi.AsyncStore}. Validation, key prefixes, failure policies and the async
 * adapter live in the core, so a store does storage only. Run {@code tally-tck} against it.
 */
package dev.tally.spi;
