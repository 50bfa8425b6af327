package dev.tally.jdbc;

/**
 * What one {@link Flush#run} did.
 *
 * @param resumed unfinished batches of an earlier, interrupted flusher that this run finished
 * @param batches batches this run started and finished (resumed ones excluded)
 * @param keys keys whose count was non-zero and went through the statement
 * @param total the sum of the counts moved
 * @param unmatched keys whose statement changed no row (e.g. no such episode): their counts are
 *     recorded in the ledger, not in the user's table
 */
public record FlushResult(int resumed, int batches, long keys, long total, long unmatched) {}
