package dev.tally;

/**
 * The outcome of a bounded increment ({@link Counters#incr(String, long, long, Bounds)}).
 *
 * @param applied {@code true} if the counter changed (possibly to a bound, when saturating);
 *     {@code false} if the increment was refused and nothing changed
 * @param value the counter's value after the call: the new value if applied, else the value it
 *     kept (for a missing counter, the default it would have started from; it stays missing)
 */
public record BoundedResult(boolean applied, long value) {}
