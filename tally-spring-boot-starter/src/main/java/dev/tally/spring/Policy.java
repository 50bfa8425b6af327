package dev.tally.spring;

import dev.tally.Limit;
import dev.tally.http.RateLimitFields;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One quota policy of a rule: a {@link Limit} with the id that the {@code RateLimit} and
 * {@code RateLimit-Policy} header fields give it, parsed from the text form the command line and
 * the server use:
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
 * </table>
 *
 * <p>Durations are a whole number and a unit: {@code ms}, {@code s}, {@code m}, {@code h},
 * {@code d}.
 */
final class Policy {
  static final Pattern ID = Pattern.compile("[A-Za-z0-9._:-]{1,64}");
  private static final Pattern RATE = Pattern.compile("(\\d+)(?::(\\d+))?/(\\d*)(ms|s|m|h|d)");
  private static final Pattern QUOTA = Pattern.compile("(\\d+)/(day|month)(?:@(.+))?");
  private static final String FORMS = "token-bucket 100/1m, token-bucket 10:1/1s, leaky-bucket 100/1m,"
      + " gcra 15:30/60s, fixed-window 1000/1h, sliding-window 1000/1h, quota 1000/month,"
      + " quota 50/day@Europe/Paris";

  private final String id;
  private final String text;
  private final Limit limit;
  /** How long the limit takes to refill completely, or the window; null for quotas. */
  private final Duration window;

  private Policy(String id, String text, Limit limit, Duration window) {
    this.id = id;
    this.text = text;
    this.limit = limit;
    this.window = window;
  }

  /**
   * Parses {@code text} (e.g. {@code token-bucket 100/1m}) as the policy {@code id}.
   *
   * @throws IllegalArgumentException saying what a good one looks like
   */
  static Policy parse(String id, String text) {
    Objects.requireNonNull(id, "id");
    if (!ID.matcher(id).matches()) {
      throw new IllegalArgumentException("policy id '" + id + "' must be 1 to 64 letters, digits"
          + " or . _ : -");
    }
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("policy '" + id + "' has no limit; write one like " + FORMS);
    }
    String t = text.strip();
    int space = t.indexOf(' ');
    if (space < 0) {
      throw new IllegalArgumentException("policy '" + id + "': '" + t + "' names no algorithm;"
          + " write one like " + FORMS);
    }
    String kind = t.substring(0, space).toLowerCase(Locale.ROOT);
    String spec = t.substring(space + 1).strip();
    try {
      return switch (kind) {
        case "quota" -> quota(id, t, spec);
        case "token-bucket" -> {
          Rate r = rate(spec);
          long capacity = r.prefix == null ? r.count : r.prefix;
          yield new Policy(id, t, Limit.tokenBucket(capacity, r.count, r.period),
              scale(r.period, capacity, r.count));
        }
        case "leaky-bucket" -> {
          Rate r = noPrefix(rate(spec));
          yield new Policy(id, t, Limit.leakyBucket(r.count, r.period), r.period);
        }
        case "gcra" -> {
          Rate r = rate(spec);
          if (r.prefix == null) {
            throw new IllegalArgumentException("a GCRA limit needs a burst: BURST:COUNT/PERIOD,"
                + " like gcra 15:30/60s");
          }
          Limit l = Limit.gcra(r.prefix, r.count, r.period);
          yield new Policy(id, t, l, scale(r.period, l.limit(), r.count));
        }
        case "fixed-window" -> {
          Rate r = noPrefix(rate(spec));
          yield new Policy(id, t, Limit.fixedWindow(r.count, r.period), r.period);
        }
        case "sliding-window" -> {
          Rate r = noPrefix(rate(spec));
          yield new Policy(id, t, Limit.slidingWindow(r.count, r.period), r.period);
        }
        default -> throw new IllegalArgumentException("unknown algorithm '" + kind + "'");
      };
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("policy '" + id + "': '" + t + "': " + e.getMessage()
          + " (forms: " + FORMS + ")");
    }
  }

  private static Policy quota(String id, String text, String spec) {
    Matcher m = QUOTA.matcher(spec);
    if (!m.matches()) {
      throw new IllegalArgumentException("a quota is ALLOWANCE/day or ALLOWANCE/month, with an"
          + " optional @zone");
    }
    Limit.Period period = Limit.Period.valueOf(m.group(2).toUpperCase(Locale.ROOT));
    java.time.ZoneId zone;
    try {
      zone = m.group(3) == null ? java.time.ZoneOffset.UTC : java.time.ZoneId.of(m.group(3));
    } catch (java.time.DateTimeException e) {
      throw new IllegalArgumentException("unknown time zone '" + m.group(3) + "': expected an id like UTC"
          + " or Europe/Paris");
    }
    return new Policy(id, text, Limit.quota(number(m.group(1)), period, zone), null);
  }

  private record Rate(Long prefix, long count, Duration period) {}

  private static Rate rate(String spec) {
    Matcher m = RATE.matcher(spec);
    if (!m.matches()) {
      throw new IllegalArgumentException("expected COUNT/PERIOD or N:COUNT/PERIOD, the period a"
          + " number and one of ms, s, m, h, d");
    }
    Long prefix = null;
    long count = number(m.group(1));
    if (m.group(2) != null) {
      prefix = count;
      count = number(m.group(2));
    }
    long amount = m.group(3).isEmpty() ? 1 : number(m.group(3));
    Duration unit = switch (m.group(4)) {
      case "ms" -> Duration.ofMillis(1);
      case "s" -> Duration.ofSeconds(1);
      case "m" -> Duration.ofMinutes(1);
      case "h" -> Duration.ofHours(1);
      default -> Duration.ofDays(1);
    };
    try {
      return new Rate(prefix, count, unit.multipliedBy(amount));
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("the period is too long", e);
    }
  }

  private static Rate noPrefix(Rate r) {
    if (r.prefix != null) {
      throw new IllegalArgumentException("only token-bucket and gcra take N:COUNT");
    }
    return r;
  }

  private static long number(String digits) {
    try {
      return Long.parseLong(digits);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + digits + "' is too large", e);
    }
  }

  /** {@code period * units / per}, saturating: how long the limit takes to refill completely. */
  private static Duration scale(Duration period, long units, long per) {
    java.math.BigInteger nanos = java.math.BigInteger.valueOf(period.toNanos())
        .multiply(java.math.BigInteger.valueOf(units))
        .divide(java.math.BigInteger.valueOf(per));
    return Duration.ofNanos(nanos.min(java.math.BigInteger.valueOf(Long.MAX_VALUE)).longValue());
  }

  /** The id the header fields name the policy by. */
  String id() {
    return id;
  }

  /** The text it was parsed from. */
  String text() {
    return text;
  }

  Limit limit() {
    return limit;
  }

  /**
   * The {@code w} of {@code RateLimit-Policy}: whole seconds, rounded up, at least 1: the time the
   * limit takes to refill completely, the window, or the length of the current calendar period.
   */
  long windowSeconds(Instant now) {
    Duration w = window;
    if (w == null) {
      ZonedDateTime start = limit.period() == Limit.Period.DAY
          ? now.atZone(limit.zone()).toLocalDate().atStartOfDay(limit.zone())
          : now.atZone(limit.zone()).toLocalDate().withDayOfMonth(1).atStartOfDay(limit.zone());
      ZonedDateTime end = limit.period() == Limit.Period.DAY ? start.plusDays(1) : start.plusMonths(1);
      w = Duration.between(start, end);
    }
    // Rounded up, so a client that waits as told is never early.
    return Math.max(1, RateLimitFields.ceilSeconds(w.toNanos()));
  }

  @Override
  public String toString() {
    return id + "=" + text;
  }
}
