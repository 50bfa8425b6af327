package dev.tally;

import java.time.Duration;

/**
 * The operations of one {@link Counters#transaction}. Calls only record; the whole group is
 * applied atomically when the callback returns, and each operation's result is then read from
 * the {@link TransactionResult} by its position. Recording first is what lets network stores
 * apply a transaction in one round trip (one Redis script, one {@code TransactWriteItems}).
 *
 * <p>Keys are relative to the group the transaction was opened on. A transaction object must
 * not be used after its callback returns.
 */
public interface Transaction {

  /** Adds 1 (missing counter starts at 0); the result is the new value. */
  Transaction incr(String key);

  /** Adds {@code delta} (missing counter starts at 0); the result is the new value. */
  Transaction incr(String key, long delta);

  /** Adds {@code delta} with a default, as {@link Counters#incr(String, long, long)}. */
  Transaction incr(String key, long delta, long dflt);

  /** Adds {@code delta} to a counter that must exist, else the whole transaction fails. */
  Transaction incrExisting(String key, long delta);

  /** Subtracts {@code delta} (missing counter starts at 0); the result is the new value. */
  Transaction decr(String key, long delta);

  /**
   * Adds {@code delta} within {@code bounds}, as {@link Counters#incr(String, long, long,
   * Bounds)}; the result is the new value. A refusal refuses the whole transaction: nothing is
   * applied and {@link CounterBoundException} is thrown, with the value the counter kept.
   */
  Transaction incr(String key, long delta, long dflt, Bounds bounds);

  /** Subtracts {@code delta} within {@code bounds}. @see #incr(String, long, long, Bounds) */
  Transaction decr(String key, long delta, long dflt, Bounds bounds);

  /** Adds a floating {@code delta} with a default; the result is the new value. */
  Transaction incr(String key, double delta, double dflt);

  /** Sets a value, with an expiry if {@code ttl} is not null; the result is the value. */
  Transaction put(String key, long value, Duration ttl);

  /** Deletes a counter; the result is 1 if it existed, else 0. */
  Transaction delete(String key);

  /** Reads a counter as part of the atomic group; the result is absent if it is missing. */
  Transaction get(String key);
}
