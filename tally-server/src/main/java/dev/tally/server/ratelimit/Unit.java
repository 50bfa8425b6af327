package dev.tally.server.ratelimit;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * The units of a rules file's {@code rate_limit}, with the numbers Envoy's protocol gives them and
 * the window each stands for. Windows are aligned to the Unix epoch, as envoyproxy/ratelimit
 * aligns them (the start of a window is {@code now - now % length}): a minute starts at :00, a
 * day at midnight UTC, a week every 7 days, a month every 30 days and a year every 365 days
 * from 1970, exactly as there.
 */
public enum Unit {
  SECOND(1, Duration.ofSeconds(1)),
  MINUTE(2, Duration.ofMinutes(1)),
  HOUR(3, Duration.ofHours(1)),
  DAY(4, Duration.ofDays(1)),
  MONTH(5, Duration.ofDays(30)),
  YEAR(6, Duration.ofDays(365)),
  /** Seven days from the epoch (a Thursday), as envoyproxy/ratelimit's weeks. */
  WEEK(7, Duration.ofDays(7));

  private final int number;
  private final Duration window;

  Unit(int number, Duration window) {
    this.number = number;
    this.window = window;
  }

  /** The value of this unit in Envoy's {@code RateLimit.Unit} and {@code RateLimitUnit} enums. */
  public int number() {
    return number;
  }

  public Duration window() {
    return window;
  }

  public String yamlName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The unit Envoy numbers {@code number}, or null (0 is Envoy's UNKNOWN). */
  public static Unit ofNumber(int number) {
    return Arrays.stream(values()).filter(u -> u.number == number).findFirst().orElse(null);
  }

  /** The unit a rules file names, case-insensitively, or null. */
  static Unit ofYaml(String name) {
    return Arrays.stream(values()).filter(u -> u.name().equalsIgnoreCase(name)).findFirst().orElse(null);
  }
}
