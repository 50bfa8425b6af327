/**
 * Tally: exact counters and rate limits shared by every thread, process and host.
 *
 * <p>Start at {@link dev.tally.Tally}: open a store by URI, then use its
 * {@link dev.tally.Counters}. Everything in this package is the public API; stores plug in
 * through the contract in {@code dev.tally.spi}, which uses this package's values and is never named
 * back from it; the implementation ({@code dev.tally.internal}) is found at run time.
 */
package dev.tally;
