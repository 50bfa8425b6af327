package dev.tally.spi;

import dev.tally.Decision;

/**
 * The result of running a limiter's state machine once.
 *
 * @param record the state to store, or {@code null} to delete it (the limiter is full again, so
 *     no state is the same as this state)
 * @param decision the answer for the caller
 * @param keepNanos how long the store must keep {@code record}: after that the limiter is full
 *     and the state may expire (0 when {@code record} is null)
 */
public record LimiterOutcome(long[] record, Decision decision, long keepNanos) {}
