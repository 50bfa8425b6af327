package dev.tally;

import java.time.Instant;

/**
 * The state of a {@link LeakyBucket} after an operation.
 *
 * @param capacity how much the bucket holds
 * @param remaining how much more can be added now
 * @param reset when the bucket will be empty again
 */
public record BucketState(long capacity, long remaining, Instant reset) {}
