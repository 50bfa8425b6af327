package dev.tally.spi;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The period starts a calendar quota can need around an instant, for a store that runs the
 * quota algorithm on its server (a Lua script, a SQL function), which has no time-zone database:
 * the day before, the day, the next two days, and likewise the month before, the month and the
 * next two months, as epoch seconds in the quota's zone (daylight saving included). These are
 * exactly the instants the core's quota can take as a period end for a time within a day of
 * {@code now}, so a server whose clock is within a day of the caller's picks the right period
 * from them.
 *
 * <p>Computed once per zone and day, and kept while that day lasts.
 */
public final class QuotaBoundaries {
  private static final long NANOS = 1_000_000_000L;
  private static final ConcurrentHashMap<ZoneId, QuotaBoundaries> BY_ZONE = new ConcurrentHashMap<>();

  private final long from;
  private final long until;
  private final long[] starts;
  private final String text;

  private QuotaBoundaries(long from, long until, long[] starts) {
    this.from = from;
    this.until = until;
    this.starts = starts;
    StringBuilder b = new StringBuilder(96);
    for (int i = 0; i < starts.length; i++) {
      b.append(i == 0 ? "" : " ").append(starts[i]);
    }
    this.text = b.toString();
  }

  /** The boundaries in {@code zone} around {@code nowNanos} (epoch nanoseconds). */
  public static QuotaBoundaries around(ZoneId zone, long nowNanos) {
    QuotaBoundaries b = BY_ZONE.get(zone);
    if (b == null || nowNanos < b.from || nowNanos >= b.until) {
      b = compute(zone, nowNanos);
      BY_ZONE.put(zone, b);
    }
    return b;
  }

  private static QuotaBoundaries compute(ZoneId zone, long now) {
    LocalDate day = Instant.ofEpochSecond(Math.floorDiv(now, NANOS), Math.floorMod(now, NANOS))
        .atZone(zone).toLocalDate();
    LocalDate month = day.withDayOfMonth(1);
    long[] s = new long[8];
    for (int i = -1; i <= 2; i++) {
      s[i + 1] = start(day.plusDays(i), zone);
      s[i + 5] = start(month.plusMonths(i), zone);
    }
    return new QuotaBoundaries(start(day, zone) * NANOS, start(day.plusDays(1), zone) * NANOS, s);
  }

  private static long start(LocalDate date, ZoneId zone) {
    return date.atStartOfDay(zone).toEpochSecond();
  }

  /** The eight starts: days d-1, d, d+1, d+2, then months m-1, m, m+1, m+2 (epoch seconds). */
  public long[] starts() {
    return starts.clone();
  }

  /** The eight starts as one space-separated text, for arguments passed as strings. */
  public String text() {
    return text;
  }

  /** Start {@code i} of {@link #starts()}, without a copy. */
  public long start(int i) {
    return starts[i];
  }
}
