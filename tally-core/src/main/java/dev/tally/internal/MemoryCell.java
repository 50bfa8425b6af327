package dev.tally.internal;

/**
 * What the {@code mem:} store keeps under a name: a counter's cell or a limiter's. Both kinds
 * live in one map, so a name holds one kind by construction: an operation of the other kind
 * finds the cell that is there, and is refused while it is live (an expired counter or a full
 * limiter is dropped first, as the sweeper would drop it, and the name is free).
 */
sealed interface MemoryCell permits MemoryStore.Cell, MemoryLimiters.BucketCell, MemoryLimiters.RecordCell {}
