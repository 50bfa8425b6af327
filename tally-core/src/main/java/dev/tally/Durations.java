package dev.tally;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations as Tally reads and writes them ({@code 40d}, {@code 1h30m}, {@code 2.5s},
 * {@code 500ms}): in its command line, its HTTP API and its limits' text form ({@link LimitSpec}),
 * and in its messages and answers, never ISO-8601's {@code PT2S}, so that a value quoted in an
 * error can be sent back as it is.
 */
public final class Durations {
  /** What every message about an unreadable duration ends with. */
  public static final String HINT = "expected a duration like 500ms, 30s, 5m, 40d";

  private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h|d|w)");

  private Durations() {}

  /**
   * Reads a duration: one or more {@code NUMBER UNIT} parts ({@code ns us ms s m h d w}, e.g.
   * {@code 1h30m}, {@code 1.5s}), or ISO-8601 ({@code PT30S}). Zero is allowed here; callers
   * that need a positive duration say so.
   *
   * @throws IllegalArgumentException naming the text and ending with {@link #HINT}
   */
  public static Duration parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty duration: " + HINT);
    }
    String s = text.strip();
    if (s.startsWith("P") || s.startsWith("p")) {
      try {
        Duration d = Duration.parse(s);
        if (d.isNegative()) {
          throw new IllegalArgumentException("'" + text + "' is negative: " + HINT);
        }
        return d;
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("'" + text + "' is not a duration: " + HINT);
      }
    }
    Matcher m = PART.matcher(s);
    Duration total = Duration.ZERO;
    int at = 0;
    while (at < s.length()) {
      if (!m.find(at) || m.start() != at) {
        throw new IllegalArgumentException("'" + text + "' "
            + (s.chars().allMatch(Character::isDigit) ? "has no unit: " : "is not a duration: ") + HINT);
      }
      try {
        total = total.plus(part(m.group(1), m.group(2)));
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException("'" + text + "' is too long a duration");
      }
      at = m.end();
    }
    return total;
  }

  private static Duration part(String number, String unit) {
    long nanosPerUnit = switch (unit) {
      case "ns" -> 1L;
      case "us", "µs" -> 1_000L;
      case "ms" -> 1_000_000L;
      case "s" -> 1_000_000_000L;
      case "m" -> 60_000_000_000L;
      case "h" -> 3_600_000_000_000L;
      case "d" -> 86_400_000_000_000L;
      case "w" -> 604_800_000_000_000L;
      default -> throw new AssertionError(unit);
    };
    BigInteger nanos = new BigDecimal(number).multiply(BigDecimal.valueOf(nanosPerUnit)).toBigInteger();
    BigInteger[] sn = nanos.divideAndRemainder(BigInteger.valueOf(1_000_000_000L));
    return Duration.ofSeconds(sn[0].longValueExact(), sn[1].longValue());
  }

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
