package dev.tally.redis;

import dev.tally.TallyException;

/**
 * How a counter's value is written in its Redis string, so that {@code redis-cli GET} shows it
 * and {@code INCRBY} works on it:
 *
 * <ul>
 *   <li>an <b>integer</b> counter is its decimal: {@code "42"}, {@code "-7"}, exactly what
 *       {@code INCRBY} reads and writes;
 *   <li>a <b>floating</b> counter is a decimal that always carries a {@code '.'} or an exponent:
 *       {@code "2.5"}, {@code "3.0"}, {@code "1.0E-300"} (written here) or {@code "1e-300"}
 *       (written by the scripts). The marker is what keeps a floating counter that holds a whole
 *       number floating: {@code "3.0"} is floating, {@code "3"} is an integer.
 * </ul>
 *
 * {@code INCRBY} refuses a floating value by itself ("value is not an integer"), which is exactly
 * {@link dev.tally.NotAnIntegerException}. The one way to lose the marker is a hand-typed
 * {@code INCRBYFLOAT} that lands on a whole number (Redis then writes {@code "3"}); Tally's own
 * floating increments go through a script that keeps it.
 */
final class CounterValues {
  private CounterValues() {}

  /** The string to store for {@code value} ({@code Long} or {@code Double}). */
  static String encode(Number value) {
    // Double.toString always writes a '.' ("3.0", "1.0E-300"); NaN and infinities never get here.
    return value instanceof Double ? Double.toString(value.doubleValue()) : Long.toString(value.longValue());
  }

  /** Whether {@code s} is an integer counter: an optional minus and 1 to 19 digits. */
  static boolean isInteger(String s) {
    int n = s.length();
    int start = n > 0 && s.charAt(0) == '-' ? 1 : 0;
    if (n == start || n - start > 19) {
      return false;
    }
    for (int i = start; i < n; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  /**
   * The counter held in {@code s}: a {@code Long}, a {@code Double}, or {@code null} for a missing
   * key.
   *
   * @throws TallyException if {@code s} is not a number Tally could have written
   */
  static Number decode(String key, String s) {
    if (s == null) {
      return null;
    }
    if (isInteger(s)) {
      try {
        return Long.parseLong(s);
      } catch (NumberFormatException outOfRange) {
        // 19 digits past Long.MAX_VALUE: not a counter Tally wrote; fall through to the message
      }
    } else if (!s.isEmpty() && (Character.isDigit(s.charAt(s.length() - 1)) || s.endsWith("."))) {
      try {
        double d = Double.parseDouble(s);
        if (Double.isFinite(d)) {
          return d;
        }
      } catch (NumberFormatException notANumber) {
        // fall through to the message
      }
    }
    throw notACounter(key, s);
  }

  static TallyException notACounter(String key, String value) {
    String shown = value == null ? "a value of another Redis type"
        : "'" + (value.length() > 40 ? value.substring(0, 40) + "…" : value) + "'";
    return new TallyException("Redis key '" + key + "' holds " + shown + ", which is not a counter;"
        + " delete it or use another key");
  }
}
