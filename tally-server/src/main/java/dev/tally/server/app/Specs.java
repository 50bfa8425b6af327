package dev.tally.server.app;

/**
 * Numbers as both front ends read them (durations and limits have their text forms in
 * {@link dev.tally.Durations} and {@link dev.tally.LimitSpec}). Every parse error says what to
 * type instead, in one line.
 */
public final class Specs {
  private Specs() {}

  /**
   * Parses a number the way both front ends accept one: an integer ({@code 5}, {@code -3}) as a
   * {@code Long}, a decimal ({@code 0.5}, {@code 1e3}) as a {@code Double}.
   */
  public static Number number(String text, String what) {
    if (text != null) {
      String s = text.strip();
      try {
        return Long.parseLong(s);
      } catch (NumberFormatException notLong) {
        try {
          boolean integer = s.matches("[-+]?\\d+");
          if (!integer && !s.isEmpty() && Character.isDigit(s.charAt(s.length() - 1))) {
            double d = Double.parseDouble(s);
            if (Double.isFinite(d)) {
              return d;
            }
          }
        } catch (NumberFormatException notDouble) {
          // fall through to the message
        }
      }
    }
    throw new IllegalArgumentException("'" + text + "' is not a valid " + what
        + ": expected an integer like 5 or -3, or a decimal like 0.5"
        + (text != null && text.strip().matches("-?\\d{19,}") ? " (integers are 64-bit)" : ""));
  }
}
