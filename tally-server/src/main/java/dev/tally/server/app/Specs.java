package dev.tally.server.app;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The text forms shared by the command line and the HTTP API: durations ({@code 500ms},
 * {@code 40d}, {@code 1h30m}) and rates ({@code 100/1m}). Every parse error says what to type
 * instead, in one line.
 */
public final class Specs {
  public static final String DURATION_HINT = "expected a duration like 500ms, 30s, 5m, 40d";

  private static final Pattern DURATION_PART =
      Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h|d|w)");
  private static final Pattern RATE = Pattern.compile("(?:(\\d+):)?(\\d+)/(.+)");

  private Specs() {}

  /**
   * Parses a duration: one or more {@code NUMBER UNIT} parts ({@code ns us ms s m h d w}, e.g.
   * {@code 1h30m}, {@code 1.5s}), or ISO-8601 ({@code PT30S}). Zero is allowed here; callers
   * that need a positive duration say so.
   */
  public static Duration duration(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty duration: " + DURATION_HINT);
    }
    String s = text.strip();
    if (s.startsWith("P") || s.startsWith("p")) {
      try {
        return nonNegative(Duration.parse(s), text);
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException("'" + text + "' is not a duration: " + DURATION_HINT);
      }
    }
    Matcher m = DURATION_PART.matcher(s);
    Duration total = Duration.ZERO;
    int at = 0;
    while (at < s.length()) {
      if (!m.find(at) || m.start() != at) {
        String hint = s.chars().allMatch(Character::isDigit)
            ? "'" + text + "' has no unit: " + DURATION_HINT
            : "'" + text + "' is not a duration: " + DURATION_HINT;
        throw new IllegalArgumentException(hint);
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
    BigDecimal nanos = new BigDecimal(number)
        .multiply(BigDecimal.valueOf(nanosPerUnit));
    BigInteger whole = nanos.toBigInteger();
    BigInteger[] sn = whole.divideAndRemainder(BigInteger.valueOf(1_000_000_000L));
    return Duration.ofSeconds(sn[0].longValueExact(), sn[1].longValue());
  }

  private static Duration nonNegative(Duration d, String text) {
    if (d.isNegative()) {
      throw new IllegalArgumentException("'" + text + "' is negative: " + DURATION_HINT);
    }
    return d;
  }

  /**
   * A duration in the form {@link #duration} reads, largest units first, exact to the
   * millisecond: {@code 40d}, {@code 1h30m}, {@code 2.5s}, {@code 850ms}, {@code 0s}.
   */
  public static String format(Duration d) {
    return dev.tally.Durations.format(d);
  }

  /** A count over a period: {@code 100/1m}, {@code 100/m}, {@code 10:1/1s}. */
  record Rate(Long prefix, long count, Duration period) {}

  /**
   * Parses {@code [PREFIX:]COUNT/PERIOD}. The period may be a duration or a bare unit
   * ({@code 100/m} is {@code 100/1m}); {@code what} and {@code example} make the error message.
   */
  static Rate rate(String text, String what, String example) {
    String hint = "expected " + what + " like " + example;
    if (text == null) {
      throw new IllegalArgumentException("missing " + what + ": " + hint);
    }
    Matcher m = RATE.matcher(text.strip());
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not " + what + ": " + hint);
    }
    Long prefix = m.group(1) == null ? null : parseCount(m.group(1), text, hint);
    long count = parseCount(m.group(2), text, hint);
    Duration period;
    String p = m.group(3);
    String unit = bareUnit(p);
    try {
      period = duration(unit != null ? "1" + unit : p);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("'" + text + "' has no valid period after '/': " + hint);
    }
    if (period.isZero()) {
      throw new IllegalArgumentException("'" + text + "' has a zero period: " + hint);
    }
    return new Rate(prefix, count, period);
  }

  private static String bareUnit(String p) {
    return switch (p.toLowerCase(Locale.ROOT)) {
      case "s", "sec", "second" -> "s";
      case "m", "min", "minute" -> "m";
      case "h", "hour" -> "h";
      case "d", "day" -> "d";
      case "w", "week" -> "w";
      default -> null;
    };
  }

  private static long parseCount(String digits, String text, String hint) {
    try {
      return Long.parseLong(digits);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + text + "' has a number too large: " + hint);
    }
  }

  /** A time zone by id ({@code Europe/Paris}, {@code UTC}, {@code +02:00}). */
  static ZoneId zone(String id, String text) {
    try {
      return id == null ? ZoneOffset.UTC : ZoneId.of(id);
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("'" + text + "' names an unknown time zone '" + id
          + "': expected an id like UTC or Europe/Paris");
    }
  }

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
