package dev.tally.spi;

import dev.tally.Limit;
import java.util.List;

/**
 * A rate limiter as a store sees it: its key, its limits, and its state machine.
 *
 * <p>A store runs {@link #apply} atomically: read the stored record, apply, write the result (or
 * delete it) with an expiry of {@link LimiterOutcome#keepNanos()}, all as one step with respect
 * to every other caller of the same key (a lock, a compare-and-set loop with a bounded number of
 * retries, a conditional write). A store that cannot run Java inside its server (Redis) instead
 * implements the same machine in its own language over the same record; the conformance kit
 * checks that the two agree.
 *
 * <p>The record is a {@code long[]} of {@code 6} longs per limit: a tag (0 for none), two
 * parameters and three state words. Its layout is documented on the core's algorithms; a store
 * only needs to keep the longs.
 */
public interface LimiterCall {

  /** The full key of the limiter's state. */
  String key();

  /** The limits the caller configured (the stored ones win when they differ). */
  List<Limit> limits();

  /**
   * Runs the state machine once. Pure: reads no clock and no store.
   *
   * @param stored the stored record, or null if there is none; it may be modified
   * @param now the time to decide at, in epoch nanoseconds (the store's clock)
   * @param operation what to do
   * @param permits how many units (ignored by {@code PEEK}, {@code RESET}, {@code RECONFIGURE})
   */
  LimiterOutcome apply(long[] stored, long now, LimiterOperation operation, long permits);
}
