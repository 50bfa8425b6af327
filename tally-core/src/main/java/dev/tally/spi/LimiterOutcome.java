package dev.tally.spi;

import dev.tally.Decision;

/**
 * The result of running a limiter's state machine once.
 *
 * @param record the words to store, or {@code null} to delete them (the limiter is full again, so
 *     no state is the same as this state); a store that can keeps a
 *     {@link LimiterRecord#tombstone tombstone} of {@link #decidedAt()} instead
 * @param decision the answer for the caller
 * @param keepNanos how long the store must keep {@code record}: after that the limiter is full
 *     and the state may expire (0 when {@code record} is null)
 * @param decidedAt the instant the decision was taken at: the store's {@code now}, or the
 *     stored {@link LimiterRecord#decidedAt()} if that was later; store it with the record
 */
public record LimiterOutcome(long[] record, Decision decision, long keepNanos, long decidedAt) {

  /** The record to store: the words and {@link #decidedAt()}, or a tombstone when full again. */
  public LimiterRecord next() {
    return record == null ? LimiterRecord.tombstone(decidedAt) : new LimiterRecord(decidedAt, record);
  }
}
