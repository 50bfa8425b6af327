package dev.tally.server.app;

import java.time.Duration;

/**
 * One operation of a transaction.
 *
 * @param op {@code incr}, {@code decr}, {@code put}, {@code delete} or {@code get}
 * @param delta for incr/decr: a {@code Long}, or a {@code Double} for a floating counter
 * @param dflt for incr/decr: the starting value of a missing counter
 * @param value for put
 * @param ttl for put, or null
 * @param mustExist for incr/decr: fail the transaction if the counter is missing
 */
public record TxOp(String op, String key, Number delta, Number dflt, Number value, Duration ttl,
    boolean mustExist) {}
