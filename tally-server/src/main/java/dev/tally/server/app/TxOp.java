package dev.tally.server.app;

import java.time.Duration;

/**
 * One operation of a transaction: {@code incr} or {@code decr} (a {@code Double} delta or default
 * for a floating counter), {@code put} (value, ttl or null), {@code delete} or {@code get}.
 */
public record TxOp(String op, String key, Number delta, Number dflt, Number value, Duration ttl,
    boolean mustExist) {}
