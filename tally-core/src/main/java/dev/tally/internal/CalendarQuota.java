package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
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
 *
 * <p>Debt: a charge counts in the current period until {@code used} is twice the limit in force
 * (top-ups included), and the period refuses until a refund or a top-up brings it back below the
 * limit, or it ends: the debt is forgiven with the period, as an allowance starts afresh whatever
 * was used. A quota billed per period owes nothing to the next one, and a charge decided after
 * the boundary counts in the new period, since the old one can no longer refuse anyone.
 */
final class CalendarQuota extends Algorithm {
  static final CalendarQuota INSTANCE = new CalendarQuota();
  private static final long NANOS = 1_000_000_000L;

  private CalendarQuota() {}

  /**
   * The end of the period containing {@code now}, as epoch nanoseconds: the first start of a
   * day (or month) in the zone that is after {@code now}.
   *
   * <p>That is usually the start of the day after {@code now}'s local date, but not where clocks
   * went back across midnight (St. John's and Moncton did so until 2010, at 00:01): the last hour
   * of the old date comes round again after the new date has begun, and belongs to the period
   * that has begun. Taking the next date's start there would give an end already past, and every
   * call in that hour would start a fresh period.
   */
  static long periodEnd(long now, long periodCode, ZoneId zone) {
    ZoneId z = zone == null ? ZoneOffset.UTC : zone;
    boolean month = periodCode == Limit.Period.MONTH.tag();
    LocalDate day = Instant.ofEpochSecond(Math.floorDiv(now, NANOS), Math.floorMod(now, NANOS))
        .atZone(z).toLocalDate();
    LocalDate next = month ? day.withDayOfMonth(1).plusMonths(1) : day.plusDays(1);
    long end = next.atStartOfDay(z).toEpochSecond() * NANOS;
    while (end <= now) {
      next = month ? next.plusMonths(1) : next.plusDays(1);
      end = next.atStartOfDay(z).toEpochSecond() * NANOS;
    }
    return end;
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

  /** Units beyond the allowance fit only thanks to top-ups, which end with the period. */
  @Override
  boolean stillFits(long[] r, int o, long now, long n, long wait) {
    return n <= r[o + P0] || wait < r[o + S0] - now;
  }

  @Override
  void consume(long[] r, int o, long now, long n) {
    r[o + S1] += n;
  }

  /** Until {@code used} is twice the limit in force, top-ups included (saturating). */
  @Override
  long debtRoom(long[] r, int o, long now) {
    long limit = limit(r, o);
    return Math.max(0, Arith.saturatedAdd(limit, limit) - r[o + S1]);
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
