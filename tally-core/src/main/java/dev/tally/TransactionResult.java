package dev.tally;

import java.util.Arrays;
import java.util.Objects;

/**
 * The results of a {@link Counters#transaction}, one per recorded operation, by position.
 * Each is an integer, a floating value, or absent (a {@code get} of a missing counter).
 */
public final class TransactionResult {
  private final Number[] results;

  /** The results, in the order of the recorded operations (stores and test doubles build these). */
  public TransactionResult(Number[] results) {
    this.results = results;
  }

  /** How many operations the transaction held. */
  public int size() {
    return results.length;
  }

  /** Whether operation {@code index} produced a value (false only for a missing {@code get}). */
  public boolean isPresent(int index) {
    return results[Objects.checkIndex(index, results.length)] != null;
  }

  /**
   * The integer result of operation {@code index}.
   *
   * @throws java.util.NoSuchElementException if it is absent
   * @throws IllegalStateException if it is a floating value
   */
  public long getLong(int index) {
    Number n = require(index);
    if (n instanceof Double) {
      throw new IllegalStateException("result " + index + " is floating (" + n + "); use getDouble");
    }
    return n.longValue();
  }

  /** The result of operation {@code index} as a double. */
  public double getDouble(int index) {
    return require(index).doubleValue();
  }

  private Number require(int index) {
    Number n = results[Objects.checkIndex(index, results.length)];
    if (n == null) {
      throw new java.util.NoSuchElementException("result " + index + " is absent (missing key)");
    }
    return n;
  }

  @Override
  public String toString() {
    return "TransactionResult" + Arrays.toString(results);
  }
}
