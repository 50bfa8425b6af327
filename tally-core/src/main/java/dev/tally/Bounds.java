package dev.tally;

/**
 * Limits an integer increment may not take a counter past, and what happens when it would: by
 * default the increment is refused (nothing changes, and the caller learns the value); with
 * {@link #saturate()} the counter is set to the bound it would have crossed instead.
 *
 * <pre>{@code
 * // Take 5 units only if 5 remain: the quota never goes below zero.
 * BoundedResult r = counters.decr("quota:acme", 5, 100, Bounds.floor(0));
 * if (!r.applied()) {
 *   reject("only " + r.value() + " units left");
 * }
 * counters.incr("gauge", 10, 0, Bounds.between(0, 100).saturate()); // stops at 100
 * }</pre>
 *
 * <p>The bounds apply to the result: an increment whose result lies in {@code [min, max]} is
 * applied; any other is refused or saturated, including one whose exact sum leaves the 64-bit
 * range. A counter that already lies outside its bounds (written by {@code put}, or by an
 * unbounded increment) is moved only into them: refused, or set to the nearer bound when
 * saturating.
 *
 * @param min the lowest value the counter may take
 * @param max the highest value the counter may take
 * @param saturates whether an increment that would cross a bound sets the counter to it
 *     ({@code true}) or is refused ({@code false})
 */
public record Bounds(long min, long max, boolean saturates) {

  /** @throws IllegalArgumentException if {@code min > max} */
  public Bounds {
    if (min > max) {
      throw new IllegalArgumentException("bounds: min (" + min + ") is greater than max (" + max
          + ")");
    }
  }

  /** A lower bound only: the counter never goes below {@code min}. */
  public static Bounds floor(long min) {
    return new Bounds(min, Long.MAX_VALUE, false);
  }

  /** An upper bound only: the counter never goes above {@code max}. */
  public static Bounds ceiling(long max) {
    return new Bounds(Long.MIN_VALUE, max, false);
  }

  /**
   * Both bounds, inclusive.
   *
   * @throws IllegalArgumentException if {@code min > max}
   */
  public static Bounds between(long min, long max) {
    return new Bounds(min, max, false);
  }

  /** These bounds, setting the counter to the crossed bound instead of refusing. */
  public Bounds saturate() {
    return new Bounds(min, max, true);
  }

  /** Whether {@code value} lies within the bounds. */
  public boolean contains(long value) {
    return value >= min && value <= max;
  }
}
