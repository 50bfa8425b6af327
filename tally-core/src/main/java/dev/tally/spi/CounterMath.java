package dev.tally.spi;

import dev.tally.Bounds;
import dev.tally.CounterBoundException;
import dev.tally.CounterOverflowException;
import dev.tally.NotAnIntegerException;

/**
 * Counter arithmetic as every store must do it, with the one message each error has. A store
 * that computes in Java calls these; one that computes on its server (a Lua script, an SQL
 * statement) must refuse the same cases, and the conformance kit checks that it does.
 *
 * <ul>
 *   <li>Integer counters are signed 64-bit; a result outside that range is refused and the value
 *       stays as it was (never wrapped, never saturated).
 *   <li>A floating delta makes the counter floating; a non-finite result is refused.
 *   <li>An integer operation on a floating counter is refused ({@link NotAnIntegerException}).
 *   <li>A bounded increment ({@link #addWithin}) is applied if its exact sum lies within the
 *       bounds; otherwise it is refused ({@link CounterBoundException}, the value unchanged) or,
 *       when saturating, the counter is set to the bound the sum lies beyond. A sum outside the
 *       64-bit range lies beyond the bound in the delta's direction, so it is never an overflow.
 * </ul>
 */
public final class CounterMath {
  private CounterMath() {}

  /**
   * {@code value + delta}.
   *
   * @throws CounterOverflowException if the sum leaves the signed 64-bit range
   */
  public static long add(String key, long value, long delta) {
    long r = value + delta;
    if (((value ^ r) & (delta ^ r)) < 0) {
      throw overflow(key, value, delta);
    }
    return r;
  }

  /**
   * {@code value + delta} for a floating counter.
   *
   * @throws CounterOverflowException if the sum is not finite
   */
  public static double add(String key, double value, double delta) {
    double r = value + delta;
    if (!Double.isFinite(r)) {
      throw new CounterOverflowException("counter '" + key + "': " + value + " + " + delta
          + " is not finite; the value is unchanged");
    }
    return r;
  }

  /** The error for {@code value + delta} leaving the 64-bit range. */
  public static CounterOverflowException overflow(String key, long value, long delta) {
    return new CounterOverflowException("counter '" + key + "': " + value + " + (" + delta
        + ") leaves the signed 64-bit range; the value is unchanged");
  }

  /** The error for an integer operation on a floating counter. */
  public static NotAnIntegerException notAnInteger(String key) {
    return new NotAnIntegerException(key);
  }

  /** The value as a {@code long} for an integer operation. */
  public static long integer(String key, Number value) {
    if (value instanceof Double) {
      throw notAnInteger(key);
    }
    return value.longValue();
  }

  /**
   * {@code value + delta} held within {@code bounds}; see the class comment.
   *
   * @throws CounterBoundException if the sum lies outside refusing bounds
   */
  public static long addWithin(String key, long value, long delta, Bounds bounds) {
    long r = value + delta;
    boolean beyond;
    boolean above;
    if (((value ^ r) & (delta ^ r)) < 0) {
      beyond = true;
      above = delta > 0;
    } else {
      above = r > bounds.max();
      beyond = above || r < bounds.min();
    }
    if (!beyond) {
      return r;
    }
    if (bounds.saturates()) {
      return above ? bounds.max() : bounds.min();
    }
    throw outOfBounds(key, value, delta, bounds);
  }

  /** The error for {@code value + delta} lying outside refusing bounds. */
  public static CounterBoundException outOfBounds(String key, long value, long delta, Bounds bounds) {
    return new CounterBoundException(key, value, "counter '" + key + "': " + value + " + (" + delta
        + ") lies outside [" + bounds.min() + ", " + bounds.max() + "]; the value is unchanged");
  }
}
