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
 * <p>The state is a {@link LimiterRecord}: the machine's words and the instant it was last
 * decided at. A store keeps both; the machine applies the rule that time never runs back.
 */
public interface LimiterCall {

  /** The full key of the limiter's state. */
  String key();

  /** The limits the caller configured (see {@link #version()} for which win when they differ). */
  List<Limit> limits();

  /**
   * The version of {@link #limits()}, 0 to {@link LimiterRecord#MAX_LIMITS_VERSION}: when the
   * stored limits differ, a newer caller's replace them, keeping what was consumed, and an older
   * caller (or one of the same version) applies the stored ones. 0 when the caller set none.
   */
  default long version() {
    return 0;
  }

  /**
   * Runs the state machine once. Pure: reads no clock and no store.
   *
   * @param stored the stored record, or null if there is none; its words may be modified. A
   *     tombstone, or words the store knows to have expired, still carry their
   *     {@link LimiterRecord#decidedAt()}: pass {@code new LimiterRecord(decidedAt, new long[0])}
   * @param now the store's clock, in epoch nanoseconds; the decision is taken at
   *     {@code max(now, stored.decidedAt())}
   * @param operation what to do
   * @param permits how many units (ignored by {@code PEEK}, {@code RESET}, {@code RECONFIGURE})
   */
  LimiterOutcome apply(LimiterRecord stored, long now, LimiterOperation operation, long permits);
}
