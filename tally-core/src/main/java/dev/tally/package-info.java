/**
 * Tally: exact counters and rate limits shared by every thread, process and host.
 *
 * <p>Start at {@link dev.tally.Tally}: open a store by URI, then use its
 * {@link dev.tally.Counters}. Everything in this package is the public API; stores plug in
 * through {@link dev.tally.spi}; all else is package-private.
 */
package dev.tally;
