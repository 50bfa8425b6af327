package dev.tally.server.app;

import dev.tally.Limit;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A {@link Limit} as the command line and the JSON API write it ({@link Kind#example()}: {@code
 * 100/1m}, {@code 10:1/1s}, {@code 15:30/60s} as redis-cell's {@code CL.THROTTLE key 15 30 60},
 * {@code 50/day@Europe/Paris}), with what the {@code RateLimit-Policy} header field needs to
 * describe it (its quota and window). A bucket (token, leaky, GCRA) takes a warm-up after its
 * rate ({@link Limit#warmUp}): {@code 100/1s warm-up 1m} (from a third of the rate, as Guava's)
 * or {@code 100/1s warm-up 1m from 1/4}.
 *
 * @param window how long it takes to refill completely; null for a quota, whose period varies
 * @param period a quota's calendar period, else null
 * @param zone a quota's time zone, else null
 */
public record LimitSpec(Kind kind, String text, String policy, Limit limit, Duration window,
    Limit.Period period, ZoneId zone) {
  private static final Pattern QUOTA = Pattern.compile("(\\d+)/(day|month)(?:@(.+))?");
  private static final Pattern WARM_UP = Pattern.compile("(.+?)\\s+warm-up\\s+(\\S+)(?:\\s+from\\s+1/(\\d{1,2}))?");
  /** Guava's and Sentinel's cold factor, when a warm-up names none. */
  private static final int COLD_FACTOR = 3;
  private static final Pattern POLICY_NAME = Pattern.compile("[A-Za-z0-9._:-]{1,64}");

  public enum Kind {
    TOKEN_BUCKET("tokenBucket", "token-bucket", "a token bucket", "100/1m or 10:1/1s"),
    LEAKY_BUCKET("leakyBucket", "leaky-bucket", "a leaky bucket", "100/1m"),
    GCRA("gcra", "gcra", "a GCRA limit", "15:30/60s (BURST:COUNT/PERIOD)"),
    FIXED_WINDOW("fixedWindow", "fixed-window", "a fixed window", "100/1h"),
    SLIDING_WINDOW("slidingWindow", "sliding-window", "a sliding window", "100/1h"),
    QUOTA("quota", "quota", "a quota", "1000/month or 50/day@Europe/Paris");

    private final String jsonName;
    private final String optionName;
    private final String description;
    private final String example;

    Kind(String jsonName, String optionName, String description, String example) {
      this.jsonName = jsonName;
      this.optionName = optionName;
      this.description = description;
      this.example = example;
    }

    public String optionName() {
      return optionName;
    }

    public String example() {
      return example;
    }

    public static Kind ofJsonName(String name) {
      for (Kind k : values()) {
        if (k.jsonName.equals(name)) {
          return k;
        }
      }
      return null;
    }

    public static String jsonNames() {
      return Arrays.stream(values()).map(k -> k.jsonName).collect(Collectors.joining(", "));
    }
  }

  /**
   * Parses {@code text} as a limit of {@code kind}.
   *
   * @param policy the name the {@code RateLimit} header fields give it
   * @throws IllegalArgumentException saying what a good one looks like
   */
  public static LimitSpec parse(Kind kind, String text, String policy) {
    if (!POLICY_NAME.matcher(policy).matches()) {
      throw new IllegalArgumentException("policy name '" + policy + "' must be 1 to 64 letters,"
          + " digits or . _ : -");
    }
    String t = text == null ? null : text.strip();
    Matcher warm = t == null ? null : WARM_UP.matcher(t);
    if (warm != null && warm.matches()) {
      LimitSpec plain = parse(kind, warm.group(1), policy);
      int factor = warm.group(3) == null ? COLD_FACTOR : Integer.parseInt(warm.group(3));
      try {
        Duration period = Specs.duration(warm.group(2));
        return new LimitSpec(kind, t, policy, plain.limit.warmUp(period, factor), plain.window, plain.period,
            plain.zone);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(kind.jsonName + " '" + t + "': " + e.getMessage(), e);
      }
    }
    try {
      return switch (kind) {
        case QUOTA -> quota(t, policy);
        case TOKEN_BUCKET -> {
          Specs.Rate r = Specs.rate(t, kind.description, kind.example);
          long capacity = r.prefix() == null ? r.count() : r.prefix();
          Limit l = Limit.tokenBucket(capacity, r.count(), r.period());
          yield new LimitSpec(kind, t, policy, l, scale(r.period(), capacity, r.count()), null, null);
        }
        case GCRA -> {
          Specs.Rate r = Specs.rate(t, kind.description, kind.example);
          if (r.prefix() == null) {
            throw new IllegalArgumentException("'" + t + "' has no burst: expected a GCRA limit"
                + " like " + kind.example);
          }
          Limit l = Limit.gcra(r.prefix(), r.count(), r.period());
          yield new LimitSpec(kind, t, policy, l, scale(r.period(), l.limit(), r.count()), null, null);
        }
        case LEAKY_BUCKET, FIXED_WINDOW, SLIDING_WINDOW -> {
          Specs.Rate r = noPrefix(Specs.rate(t, kind.description, kind.example), kind, t);
          Limit l = kind == Kind.LEAKY_BUCKET ? Limit.leakyBucket(r.count(), r.period())
              : kind == Kind.FIXED_WINDOW ? Limit.fixedWindow(r.count(), r.period())
              : Limit.slidingWindow(r.count(), r.period());
          yield new LimitSpec(kind, t, policy, l, r.period(), null, null);
        }
      };
    } catch (IllegalArgumentException e) {
      String msg = e.getMessage();
      // Limit's own checks (zero capacity, 73-year spans) name the parameter, not the text.
      throw new IllegalArgumentException(msg.startsWith("'") || msg.startsWith("missing")
          ? msg : kind.jsonName + " '" + t + "': " + msg);
    }
  }

  private static LimitSpec quota(String t, String policy) {
    Kind kind = Kind.QUOTA;
    Matcher m = t == null ? null : QUOTA.matcher(t);
    if (m == null || !m.matches()) {
      throw new IllegalArgumentException((t == null ? "missing quota" : "'" + t + "' is not a quota")
          + ": expected a quota like " + kind.example);
    }
    long allowance;
    try {
      allowance = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + t + "' has a number too large");
    }
    Limit.Period period = Limit.Period.valueOf(m.group(2).toUpperCase(Locale.ROOT));
    ZoneId zone = Specs.zone(m.group(3), t);
    return new LimitSpec(kind, t, policy, Limit.quota(allowance, period, zone), null, period, zone);
  }

  private static Specs.Rate noPrefix(Specs.Rate r, Kind kind, String text) {
    if (r.prefix() != null) {
      throw new IllegalArgumentException("'" + text + "' is not " + kind.description
          + ": expected one like " + kind.example);
    }
    return r;
  }

  /** {@code period * units / per}: how long the limit takes to refill completely. */
  private static Duration scale(Duration period, long units, long per) {
    BigInteger nanos = BigInteger.valueOf(period.toNanos())
        .multiply(BigInteger.valueOf(units))
        .divide(BigInteger.valueOf(per));
    return Duration.ofNanos(nanos.min(BigInteger.valueOf(Long.MAX_VALUE)).longValue());
  }

  /**
   * The policy window in whole seconds (at least 1), rounded up: the time the limit takes to
   * refill completely, or the length of the current calendar period of a quota.
   */
  public long windowSeconds(Instant now) {
    Duration w;
    if (window != null) {
      w = window;
    } else {
      ZonedDateTime start = period == Limit.Period.DAY
          ? now.atZone(zone).toLocalDate().atStartOfDay(zone)
          : now.atZone(zone).toLocalDate().withDayOfMonth(1).atStartOfDay(zone);
      ZonedDateTime end = period == Limit.Period.DAY ? start.plusDays(1) : start.plusMonths(1);
      w = Duration.between(start, end);
    }
    long nanos = w.toNanos();
    return Math.max(1, nanos / 1_000_000_000L + (nanos % 1_000_000_000L == 0 ? 0 : 1));
  }

  @Override
  public String toString() {
    return kind.jsonName + " " + text;
  }
}
