package dev.tally;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZoneOffset;

/**
 * An allowance per calendar period (a day or a month in a given time zone) that counts down,
 * can be refunded and topped up, and starts afresh at the period boundary.
 *
 * <p>State: {@code s0} the end of the current period (an instant), {@code s1} units used,
 * {@code s2} units topped up this period. The period is recomputed from {@code now} in the
 * limiter's zone, so a day in a zone with a daylight-saving change is 23 or 25 hours long, as a
 * user billed per day expects.
 *
 * <p>Guarantees: within one period at most {@code allowance + topUps} units are granted,
 * exactly; a denied request that fits in a fresh allowance is told to retry at the boundary;
 * one that exceeds the allowance itself is told never.
 */
final class CalendarQuota extends Algorithm {
  static final CalendarQuota INSTANCE = new CalendarQuota();
  private static final long NANOS = 1_000_000_000L;

  private CalendarQuota() {}

  /** The end of the period containing {@code now}, as epoch nanoseconds. */
  static long periodEnd(long now, long periodCode, ZoneId zone) {
    ZoneId z = zone == null ? ZoneOffset.UTC : zone;
    LocalDate day = Instant.ofEpochSecond(Math.floorDiv(now, NANOS), Math.floorMod(now, NANOS))
        .atZone(z).toLocalDate();
    LocalDate next = periodCode == Limit.Period.MONTH.ordinal() + 1
        ? day.withDayOfMonth(1).plusMonths(1)
        : day.plusDays(1);
    return next.atStartOfDay(z).toEpochSecond() * NANOS;
  }

  @Override
  void normalize(long[] r, int o, long now, ZoneId zone) {
    if (r[o + S0] <= now) {
      r[o + S0] = periodEnd(now, r[o + P1], zone);
      r[o + S1] = 0;
      r[o + S2] = 0;
    }
  }

  @Override
  long limit(long[] r, int o) {
    return Arith.saturatedAdd(r[o + P0], r[o + S2]);
  }

  @Override
  long remaining(long[] r, int o, long now) {
    return Math.max(0, limit(r, o) - r[o + S1]);
  }

  @Override
  long retryAfter(long[] r, int o, long now, long n) {
    if (n <= limit(r, o) - r[o + S1]) {
      return 0;
    }
    return n <= r[o + P0] ? r[o + S0] - now : Decision.NEVER;
  }

  @Override
  void consume(long[] r, int o, long now, long n) {
    r[o + S1] += n;
  }

  @Override
  void refund(long[] r, int o, long now, long n) {
    r[o + S1] = Math.max(0, r[o + S1] - n);
  }

  /** Adds {@code n} units to this period's allowance. */
  void topUp(long[] r, int o, long n) {
    r[o + S2] = Arith.saturatedAdd(r[o + S2], n);
  }

  @Override
  long resetAfter(long[] r, int o, long now) {
    return r[o + S1] > 0 || r[o + S2] > 0 ? r[o + S0] - now : 0;
  }

  @Override
  long consumed(long[] r, int o, long now) {
    return r[o + S1];
  }

  @Override
  void restore(long[] r, int o, long now, long consumed, ZoneId zone) {
    r[o + S0] = periodEnd(now, r[o + P1], zone);
    r[o + S1] = consumed;
    r[o + S2] = 0;
  }
}
