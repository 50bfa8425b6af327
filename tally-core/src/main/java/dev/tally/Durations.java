package dev.tally;

import java.time.Duration;
import java.util.Locale;

/**
 * Durations as Tally writes them in messages and answers: the form its command line and HTTP API
 * read ({@code 40d}, {@code 1h30m}, {@code 2.5s}, {@code 500ms}), never ISO-8601's {@code PT2S},
 * so that a value quoted in an error can be sent back as it is.
 */
public final class Durations {
  private Durations() {}

  /**
   * {@code d} with its largest units first, exact to the millisecond ({@code 1h30m},
   * {@code 2.5s}, {@code 850ms}, {@code 0s}); below a millisecond in {@code us} or {@code ns}.
   */
  public static String format(Duration d) {
    if (d.isNegative()) {
      if (d.toSeconds() == Long.MIN_VALUE) {
        return d.toDays() + "d"; // the one negative duration with no positive counterpart
      }
      return "-" + format(d.negated());
    }
    long millis;
    try {
      millis = d.toMillis();
    } catch (ArithmeticException e) {
      return d.toDays() + "d"; // past 292 million years: days are exact enough
    }
    if (millis == 0) {
      return d.isZero() ? "0s" : d.toNanos() / 1000 == 0 ? d.toNanos() + "ns" : d.toNanos() / 1000 + "us";
    }
    if (millis < 1000) {
      return millis + "ms";
    }
    StringBuilder b = new StringBuilder();
    long days = millis / 86_400_000L;
    long hours = millis / 3_600_000L % 24;
    long minutes = millis / 60_000L % 60;
    long seconds = millis / 1000 % 60;
    long ms = millis % 1000;
    if (days > 0) {
      b.append(days).append('d');
    }
    if (hours > 0) {
      b.append(hours).append('h');
    }
    if (minutes > 0) {
      b.append(minutes).append('m');
    }
    if (seconds > 0 || ms > 0) {
      b.append(seconds);
      if (ms > 0) {
        b.append('.').append(String.format(Locale.ROOT, "%03d", ms).replaceAll("0+$", ""));
      }
      b.append('s');
    }
    return b.toString();
  }
}
