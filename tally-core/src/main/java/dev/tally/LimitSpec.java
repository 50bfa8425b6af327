package dev.tally;

import java.math.BigInteger;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A named {@link Limit} in the text form that Tally's command line, HTTP API and Spring Boot
 * properties share, so that a limit copied from one works in the others:
 *
 * <table>
 *   <caption>Text forms</caption>
 *   <tr><td>{@code token-bucket 100/1m}</td><td>100 tokens, refilled at 100 a minute</td></tr>
 *   <tr><td>{@code token-bucket 10:1/1s}</td><td>10 tokens, one more each second</td></tr>
 *   <tr><td>{@code leaky-bucket 100/1m}</td><td>100 deep, drains fully in a minute</td></tr>
 *   <tr><td>{@code gcra 15:30/60s}</td><td>redis-cell's {@code CL.THROTTLE key 15 30 60}</td></tr>
 *   <tr><td>{@code fixed-window 1000/1h}, {@code sliding-window 1000/1h}</td><td></td></tr>
 *   <tr><td>{@code quota 1000/month}, {@code quota 50/day@Europe/Paris}</td><td>UTC unless a
 *       zone is given</td></tr>
 *   <tr><td>{@code token-bucket 100/1s warm-up 1m}</td><td>a bucket (token, leaky, GCRA) that
 *       starts cold, at a third of its rate, as Guava's ({@link Limit#warmUp});
 *       {@code ... from 1/4}: at a quarter</td></tr>
 * </table>
 *
 * <p>A period is a {@link Durations#parse duration} ({@code 1m}, {@code 1h30m}, {@code 500ms}) or a
 * bare unit ({@code 100/m}, {@code 100/minute}). The name is what the {@code RateLimit} header
 * fields call the limit (their policy), and what messages call it: 1 to 64 letters, digits or
 * {@code . _ : -}. Every parse error says what a good text looks like.
 */
public final class LimitSpec {
  /** The form of a name; other front ends check names given without a limit against it. */
  public static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,64}");
  private static final Pattern RATE = Pattern.compile("(?:(\\d+):)?(\\d+)/(.+)");
  private static final Pattern QUOTA = Pattern.compile("(\\d+)/(day|month)(?:@(.+))?");
  private static final Pattern WARM_UP =
      Pattern.compile("(.+?)\\s+warm-up\\s+(\\S+)(?:\\s+from\\s+1/(\\d{1,2}))?");
  /** Guava's and Sentinel's cold factor, when a warm-up names none. */
  private static final int COLD_FACTOR = 3;
  /** Every algorithm with a good rate, for the messages of a text that names none or another. */
  private static final String FORMS = Arrays.stream(Kind.values())
      .map(k -> k.optionName + " " + k.example).collect(Collectors.joining(", "));

  /** The algorithms, each with its name in the text form and in JSON. */
  public enum Kind {
    TOKEN_BUCKET("tokenBucket", "token-bucket", "a token bucket", "100/1m or 10:1/1s"),
    LEAKY_BUCKET("leakyBucket", "leaky-bucket", "a leaky bucket", "100/1m"),
    GCRA("gcra", "gcra", "a GCRA limit", "15:30/60s (BURST:COUNT/PERIOD)"),
    FIXED_WINDOW("fixedWindow", "fixed-window", "a fixed window", "100/1h"),
    SLIDING_WINDOW("slidingWindow", "sliding-window", "a sliding window", "100/1h"),
    QUOTA("quota", "quota", "a quota", "1000/month or 50/day@Europe/Paris");

    private final String fieldName;
    private final String optionName;
    private final String description;
    private final String example;

    Kind(String fieldName, String optionName, String description, String example) {
      this.fieldName = fieldName;
      this.optionName = optionName;
      this.description = description;
      this.example = example;
    }

    /** Its name as a JSON member: {@code tokenBucket}. */
    public String fieldName() {
      return fieldName;
    }

    /** Its name in the text form and as a command-line option: {@code token-bucket}. */
    public String optionName() {
      return optionName;
    }

    /** A good rate for it, for messages: {@code 100/1m or 10:1/1s}. */
    public String example() {
      return example;
    }

    /** The kind whose {@link #fieldName()} is {@code name}, or null. */
    public static Kind ofFieldName(String name) {
      return Arrays.stream(values()).filter(k -> k.fieldName.equals(name)).findFirst().orElse(null);
    }

    /** Every {@link #fieldName()}, for messages. */
    public static String fieldNames() {
      return Arrays.stream(values()).map(k -> k.fieldName).collect(Collectors.joining(", "));
    }

    private static Kind ofOptionName(String name) {
      return Arrays.stream(values()).filter(k -> k.optionName.equals(name)).findFirst().orElse(null);
    }
  }

  private final String name;
  private final Kind kind;
  private final String text;
  private final Limit limit;
  /** How long the limit takes to refill completely; null for a quota, whose period varies. */
  private final Duration window;

  private LimitSpec(String name, Kind kind, String text, Limit limit, Duration window) {
    this.name = name;
    this.kind = kind;
    this.text = text;
    this.limit = limit;
    this.window = window;
  }

  /**
   * Reads {@code text}, an algorithm and its rate ({@code token-bucket 100/1m}), as the limit
   * {@code name}.
   *
   * @throws IllegalArgumentException saying what a good one looks like
   */
  public static LimitSpec parse(String text, String name) {
    String t = text == null ? "" : text.strip();
    int space = t.indexOf(' ');
    if (space < 0) {
      throw new IllegalArgumentException("limit '" + name + "': '" + t + "' names no algorithm;"
          + " write one like " + FORMS);
    }
    Kind kind = Kind.ofOptionName(t.substring(0, space).toLowerCase(Locale.ROOT));
    if (kind == null) {
      throw new IllegalArgumentException("limit '" + name + "': unknown algorithm '" + t.substring(0, space)
          + "'; write one like " + FORMS);
    }
    try {
      return parse(kind, t.substring(space + 1), name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("limit '" + name + "': " + e.getMessage(), e);
    }
  }

  /**
   * Reads {@code text}, a rate ({@code 100/1m}), as a limit of {@code kind} named {@code name}.
   *
   * @throws IllegalArgumentException saying what a good one looks like
   */
  public static LimitSpec parse(Kind kind, String text, String name) {
    Objects.requireNonNull(kind, "kind");
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("limit name '" + name + "' must be 1 to 64 letters,"
          + " digits or . _ : -");
    }
    String t = text == null ? null : text.strip();
    Matcher warm = t == null ? null : WARM_UP.matcher(t);
    if (warm != null && warm.matches()) {
      LimitSpec plain = parse(kind, warm.group(1), name);
      int factor = warm.group(3) == null ? COLD_FACTOR : Integer.parseInt(warm.group(3));
      try {
        Limit limit = plain.limit.warmUp(Durations.parse(warm.group(2)), factor);
        return new LimitSpec(name, kind, t, limit, plain.window);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(kind.fieldName + " '" + t + "': " + e.getMessage(), e);
      }
    }
    try {
      return switch (kind) {
        case QUOTA -> quota(t, name);
        case TOKEN_BUCKET -> {
          Rate r = rate(t, kind);
          long capacity = r.prefix() == null ? r.count() : r.prefix();
          Limit l = Limit.tokenBucket(capacity, r.count(), r.period());
          yield new LimitSpec(name, kind, t, l, scale(r.period(), capacity, r.count()));
        }
        case GCRA -> {
          Rate r = rate(t, kind);
          if (r.prefix() == null) {
            throw new IllegalArgumentException("'" + t + "' has no burst: expected a GCRA limit"
                + " like " + kind.example);
          }
          Limit l = Limit.gcra(r.prefix(), r.count(), r.period());
          yield new LimitSpec(name, kind, t, l, scale(r.period(), l.limit(), r.count()));
        }
        case LEAKY_BUCKET, FIXED_WINDOW, SLIDING_WINDOW -> {
          Rate r = rate(t, kind);
          if (r.prefix() != null) {
            throw new IllegalArgumentException("'" + t + "' is not " + kind.description
                + ": expected one like " + kind.example);
          }
          Limit l = kind == Kind.LEAKY_BUCKET ? Limit.leakyBucket(r.count(), r.period())
              : kind == Kind.FIXED_WINDOW ? Limit.fixedWindow(r.count(), r.period())
              : Limit.slidingWindow(r.count(), r.period());
          yield new LimitSpec(name, kind, t, l, r.period());
        }
      };
    } catch (IllegalArgumentException e) {
      String msg = e.getMessage();
      // Limit's own checks (zero capacity, 73-year spans) name the parameter, not the text.
      throw new IllegalArgumentException(msg.startsWith("'") || msg.startsWith("missing")
          ? msg : kind.fieldName + " '" + t + "': " + msg);
    }
  }

  private static LimitSpec quota(String t, String name) {
    Matcher m = t == null ? null : QUOTA.matcher(t);
    if (m == null || !m.matches()) {
      throw new IllegalArgumentException((t == null ? "missing quota" : "'" + t + "' is not a quota")
          + ": expected a quota like " + Kind.QUOTA.example);
    }
    long allowance = count(m.group(1), t);
    Limit.Period period = Limit.Period.valueOf(m.group(2).toUpperCase(Locale.ROOT));
    ZoneId zone;
    try {
      zone = m.group(3) == null ? ZoneOffset.UTC : ZoneId.of(m.group(3));
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("'" + t + "' names an unknown time zone '" + m.group(3)
          + "': expected an id like UTC or Europe/Paris");
    }
    return new LimitSpec(name, Kind.QUOTA, t, Limit.quota(allowance, period, zone), null);
  }

  /** A count over a period: {@code 100/1m}, {@code 100/m}, {@code 10:1/1s}. */
  private record Rate(Long prefix, long count, Duration period) {}

  /** Reads {@code [PREFIX:]COUNT/PERIOD}; the period may be a duration or a bare unit. */
  private static Rate rate(String text, Kind kind) {
    String hint = "expected " + kind.description + " like " + kind.example;
    if (text == null) {
      throw new IllegalArgumentException("missing " + kind.description + ": " + hint);
    }
    Matcher m = RATE.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not " + kind.description + ": " + hint);
    }
    Long prefix = m.group(1) == null ? null : count(m.group(1), text);
    long count = count(m.group(2), text);
    String unit = bareUnit(m.group(3));
    Duration period;
    try {
      period = Durations.parse(unit != null ? "1" + unit : m.group(3));
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

  private static long count(String digits, String text) {
    try {
      return Long.parseLong(digits);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + text + "' has a number too large");
    }
  }

  /** {@code period * units / per}, saturating: how long the limit takes to refill completely. */
  private static Duration scale(Duration period, long units, long per) {
    BigInteger nanos = BigInteger.valueOf(period.toNanos())
        .multiply(BigInteger.valueOf(units))
        .divide(BigInteger.valueOf(per));
    return Duration.ofNanos(nanos.min(BigInteger.valueOf(Long.MAX_VALUE)).longValue());
  }

  /** What the {@code RateLimit} header fields and messages call it. */
  public String name() {
    return name;
  }

  public Kind kind() {
    return kind;
  }

  /** The rate it was read from, without the algorithm: {@code 100/1m}. */
  public String text() {
    return text;
  }

  public Limit limit() {
    return limit;
  }

  /**
   * Its window at {@code now}: how long it takes to refill completely, or the length of a quota's
   * current calendar period (a month's length varies, and a day's, at a change of clocks).
   */
  public Duration window(Instant now) {
    if (window != null) {
      return window;
    }
    ZoneId zone = limit.zone();
    ZonedDateTime start = limit.period() == Limit.Period.DAY
        ? now.atZone(zone).toLocalDate().atStartOfDay(zone)
        : now.atZone(zone).toLocalDate().withDayOfMonth(1).atStartOfDay(zone);
    ZonedDateTime end = limit.period() == Limit.Period.DAY ? start.plusDays(1) : start.plusMonths(1);
    return Duration.between(start, end);
  }

  /** {@code token-bucket 100/1m}: the form {@link #parse(String, String)} reads. */
  @Override
  public String toString() {
    return kind.optionName + " " + text;
  }
}
