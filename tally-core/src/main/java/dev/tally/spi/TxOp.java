package dev.tally.spi;

import dev.tally.Bounds;

/**
 * One recorded operation of a transaction, as a store receives it: keys are full (prefixed and
 * validated), numbers checked. A store applies a list of these atomically with
 * {@link Store#transact}.
 */
public sealed interface TxOp {

  /** The full key the operation touches. */
  String key();

  /**
   * Integer increment; {@code create == false} means the key must exist. With {@code bounds}
   * (else {@code null}) the store computes the new value with {@link CounterMath#addWithin}, and
   * a refusal fails the whole transaction with {@link dev.tally.CounterBoundException}.
   */
  record Incr(String key, long delta, long dflt, boolean create, Bounds bounds) implements TxOp {
    /** An unbounded increment. */
    public Incr(String key, long delta, long dflt, boolean create) {
      this(key, delta, dflt, create, null);
    }
  }

  /** Floating increment. */
  record IncrDouble(String key, double delta, double dflt) implements TxOp {}

  /** Set a value ({@code Long} or {@code Double}); {@code ttlNanos == 0} means no expiry. */
  record Put(String key, Number value, long ttlNanos) implements TxOp {}

  /** Delete; the result is {@code 1L} if the key was live, else {@code 0L}. */
  record Delete(String key) implements TxOp {}

  /** Read; the result is the value or {@code null}. */
  record Get(String key) implements TxOp {}
}
