package dev.tally;

import java.time.Duration;
import java.time.ZoneId;
import java.util.Locale;
import java.util.Objects;

/**
 * What a rate limiter allows: an immutable specification, checked when it is made.
 *
 * <pre>{@code
 * Limit.tokenBucket(100, Duration.ofMinutes(1));          // bursts of 100, refilled smoothly at 100/min
 * Limit.tokenBucket(10, 1, Duration.ofSeconds(1));        // bursts of 10, one more each second
 * Limit.gcra(15, 30, Duration.ofSeconds(60));             // redis-cell: CL.THROTTLE key 15 30 60
 * Limit.leakyBucket(100, Duration.ofMinutes(1));          // 100 deep, drains fully in a minute
 * Limit.fixedWindow(1000, Duration.ofHours(1));           // 1000 per clock hour
 * Limit.slidingWindow(1000, Duration.ofHours(1));         // about 1000 in any hour
 * Limit.quota(10_000, Limit.Period.MONTH, ZoneId.of("Europe/Paris")); // per calendar month
 * Limit.tokenBucket(100, Duration.ofSeconds(1))
 *     .warmUp(Duration.ofMinutes(1), 3);                   // cold: a third of the rate, full after a minute
 * }</pre>
 *
 * <p>Rates are kept as whole nanoseconds per unit, rounded <em>up</em>: a limiter may admit a
 * hair less than asked (under a nanosecond per unit), never more. Specifications whose state
 * could not be represented in 64-bit nanoseconds (a bucket that would take more than about 73
 * years to refill) are refused when made.
 */
public final class Limit {
  /** The longest refill a bucket may have, in nanoseconds (2^61, about 73 years). */
  public static final long MAX_SPAN_NANOS = 1L << 61;

  /** The algorithm a limit uses. */
  public enum Kind {
    /** Capacity with smooth refill; weighted requests. */
    TOKEN_BUCKET(1),
    /** A bucket that fills with requests and drains at a constant rate. */
    LEAKY_BUCKET(2),
    /** Generic cell rate algorithm, as redis-cell's {@code CL.THROTTLE}. */
    GCRA(3),
    /** A counter per clock-aligned window. */
    FIXED_WINDOW(4),
    /** The weighted two-window approximation of a sliding window. */
    SLIDING_WINDOW(5),
    /** An allowance per calendar period that counts down. */
    QUOTA(6);

    private final int tag;

    Kind(int tag) {
      this.tag = tag;
    }

    /**
     * The number that stands for this kind in stored limiter state. Stores write it, so it is
     * fixed for ever: a new kind takes a new number, and no number is reused.
     *
     * @return the stored tag, from 1
     */
    public int tag() {
      return tag;
    }
  }

  /** A calendar period for quotas. */
  public enum Period {
    /** From midnight to midnight in the quota's time zone. */
    DAY(1),
    /** From the first of the month at midnight to the first of the next, in the quota's zone. */
    MONTH(2);

    private final int tag;

    Period(int tag) {
      this.tag = tag;
    }

    /**
     * The number that stands for this period in a quota's stored parameters; fixed for ever.
     *
     * @return the stored tag, from 1
     */
    public int tag() {
      return tag;
    }
  }

  private final Kind kind;
  private final long limit;
  private final long intervalNanos;
  private final Period period;
  private final ZoneId zone;
  private final String text;
  private final long warmUpNanos;
  private final int coldFactor;

  /** The largest cold factor of a warm-up: it is kept in four bits of the stored tag word. */
  public static final int MAX_COLD_FACTOR = 15;

  private Limit(Kind kind, long limit, long intervalNanos, Period period, ZoneId zone, String text) {
    this(kind, limit, intervalNanos, period, zone, text, 0, 0);
  }

  private Limit(Kind kind, long limit, long intervalNanos, Period period, ZoneId zone, String text,
      long warmUpNanos, int coldFactor) {
    this.kind = kind;
    this.limit = limit;
    this.intervalNanos = intervalNanos;
    this.period = period;
    this.zone = zone;
    this.text = text;
    this.warmUpNanos = warmUpNanos;
    this.coldFactor = coldFactor;
  }

  /**
   * This limit, warming up when cold: a cold limiter grants at {@code 1/coldFactor} of its rate
   * (and of its burst), and the interval between units falls linearly to the configured one over
   * {@code period} from the instant it was first called while cold. A limiter is cold when its
   * store holds no state for it, or when it has been full and untouched for longer than
   * {@code period}; the state is the store's, so every process and host agrees (see
   * {@code docs/limiters.md#warm-up}).
   *
   * <p>Token buckets, leaky buckets and GCRA take a warm-up; windows and quotas have no rate to
   * ramp, and refuse one.
   *
   * @param period how long a cold limiter takes to reach its full rate, positive
   * @param coldFactor how many times slower a cold limiter is, from 2 to {@link #MAX_COLD_FACTOR}
   *     (Guava's and Sentinel's default is 3)
   * @return a new limit; this one is unchanged
   * @throws IllegalArgumentException for a window or quota, a bad factor or period, or a cold
   *     bucket whose state would not fit in 64-bit nanoseconds
   */
  public Limit warmUp(Duration period, int coldFactor) {
    if (kind != Kind.TOKEN_BUCKET && kind != Kind.LEAKY_BUCKET && kind != Kind.GCRA) {
      throw new IllegalArgumentException("a " + text + " has no rate to warm up: warm-up applies to"
          + " token buckets, leaky buckets and GCRA");
    }
    if (coldFactor < 2 || coldFactor > MAX_COLD_FACTOR) {
      throw new IllegalArgumentException("a warm-up's cold factor must be from 2 to " + MAX_COLD_FACTOR
          + " (a cold limiter runs that many times slower), not " + coldFactor);
    }
    long nanos = interval(period, 1, "warm-up");
    if (nanos > MAX_SPAN_NANOS) {
      throw new IllegalArgumentException("warm-up " + Durations.format(period) + " is too long (at most about 73 years)");
    }
    // Cold, each unit costs coldFactor intervals: the cold bucket's span must fit as the bucket's does.
    if (intervalNanos > MAX_SPAN_NANOS / coldFactor) {
      throw new IllegalArgumentException("one unit per " + intervalNanos + " ns, " + coldFactor
          + " times slower when cold, takes more than about 73 years; use a smaller cold factor or a faster rate");
    }
    checkSpan(limit, intervalNanos * coldFactor);
    String base = warmUpNanos == 0 ? text : text.substring(0, text.lastIndexOf(", warm-up"));
    return new Limit(kind, limit, intervalNanos, this.period, zone,
        base + ", warm-up " + Durations.format(period) + " from 1/" + coldFactor, nanos, coldFactor);
  }

  /** A token bucket of {@code capacity} tokens that refills completely over {@code period}. */
  public static Limit tokenBucket(long capacity, Duration period) {
    return tokenBucket(capacity, capacity, period);
  }

  /**
   * A token bucket holding up to {@code capacity} tokens, refilled smoothly by {@code refill}
   * tokens every {@code period}. It starts full.
   */
  public static Limit tokenBucket(long capacity, long refill, Duration period) {
    positive(capacity, "capacity");
    positive(refill, "refill");
    long interval = interval(period, refill, "token bucket");
    return new Limit(Kind.TOKEN_BUCKET, capacity, checkSpan(capacity, interval), null, null,
        "token bucket " + capacity + ", +" + refill + "/" + Durations.format(period));
  }

  /**
   * A leaky bucket {@code capacity} deep that drains at {@code capacity} per {@code drainTime}
   * (a full bucket is empty again after {@code drainTime}).
   */
  public static Limit leakyBucket(long capacity, Duration drainTime) {
    positive(capacity, "capacity");
    long interval = interval(drainTime, capacity, "leaky bucket");
    return new Limit(Kind.LEAKY_BUCKET, capacity, checkSpan(capacity, interval), null, null,
        "leaky bucket " + capacity + " per " + Durations.format(drainTime));
  }

  /**
   * GCRA with redis-cell's parameters: {@code count} per {@code period}, with bursts of up to
   * {@code maxBurst + 1} (so the reported limit is {@code maxBurst + 1}).
   */
  public static Limit gcra(long maxBurst, long count, Duration period) {
    if (maxBurst < 0) {
      throw new IllegalArgumentException("maxBurst must be zero or more, not " + maxBurst);
    }
    positive(count, "count");
    if (maxBurst == Long.MAX_VALUE) {
      throw new IllegalArgumentException("maxBurst is too large");
    }
    long interval = interval(period, count, "GCRA");
    return new Limit(Kind.GCRA, maxBurst + 1, checkSpan(maxBurst + 1, interval), null, null,
        "GCRA burst " + maxBurst + ", " + count + "/" + Durations.format(period));
  }

  /** At most {@code limit} units in each window of {@code window}, aligned to the epoch. */
  public static Limit fixedWindow(long limit, Duration window) {
    positive(limit, "limit");
    return new Limit(Kind.FIXED_WINDOW, limit, windowNanos(window), null, null,
        "fixed window " + limit + "/" + Durations.format(window));
  }

  /**
   * About {@code limit} units in any {@code window}: the count of the current window plus the
   * previous window's count weighted by how much of it still overlaps.
   */
  public static Limit slidingWindow(long limit, Duration window) {
    positive(limit, "limit");
    return new Limit(Kind.SLIDING_WINDOW, limit, windowNanos(window), null, null,
        "sliding window " + limit + "/" + Durations.format(window));
  }

  /**
   * An allowance of {@code allowance} units per calendar {@code period} in {@code zone}; it
   * counts down, can be refunded and topped up, and starts afresh at each period boundary.
   */
  public static Limit quota(long allowance, Period period, ZoneId zone) {
    positive(allowance, "allowance");
    Objects.requireNonNull(period, "period");
    Objects.requireNonNull(zone, "zone");
    return new Limit(Kind.QUOTA, allowance, period.tag(), period, zone,
        "quota " + allowance + " per " + period.name().toLowerCase(Locale.ROOT) + " in " + zone);
  }

  /** The algorithm. */
  public Kind kind() {
    return kind;
  }

  /** The most units the limit grants at once: capacity, burst, window limit or allowance. */
  public long limit() {
    return limit;
  }

  /**
   * Nanoseconds per unit of refill (buckets, GCRA), the window length (windows), or a code for
   * the calendar period (quotas: {@code DAY} 1, {@code MONTH} 2): the {@code p1} word of the
   * limiter record, for stores that run the algorithms in their own language.
   */
  public long intervalNanos() {
    return intervalNanos;
  }

  /** The calendar period of a quota, or null. */
  public Period period() {
    return period;
  }

  /** The warm-up period in nanoseconds, or 0 for a limit without warm-up ({@link #warmUp}). */
  public long warmUpNanos() {
    return warmUpNanos;
  }

  /** How many times slower the limit is when cold, or 0 for a limit without warm-up ({@link #warmUp}). */
  public int coldFactor() {
    return coldFactor;
  }

  /** The time zone of a quota, or null. */
  public ZoneId zone() {
    return zone;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Limit l && l.kind == kind && l.limit == limit
        && l.intervalNanos == intervalNanos && Objects.equals(l.zone, zone)
        && l.warmUpNanos == warmUpNanos && l.coldFactor == coldFactor;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, limit, intervalNanos, zone, warmUpNanos, coldFactor);
  }

  @Override
  public String toString() {
    return text;
  }

  private static void positive(long n, String what) {
    if (n <= 0) {
      throw new IllegalArgumentException(what + " must be positive, not " + n);
    }
  }

  private static long interval(Duration period, long units, String what) {
    Objects.requireNonNull(period, "period");
    if (period.isNegative() || period.isZero()) {
      throw new IllegalArgumentException(what + " period must be positive, not " + Durations.format(period));
    }
    long nanos;
    try {
      nanos = period.toNanos();
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(what + " period " + Durations.format(period) + " is too long", e);
    }
    // Round up: never admit faster than asked.
    return nanos / units + (nanos % units == 0 ? 0 : 1);
  }

  private static long windowNanos(Duration window) {
    long nanos = interval(window, 1, "window");
    if (nanos > MAX_SPAN_NANOS) {
      throw new IllegalArgumentException("window " + Durations.format(window) + " is too long (at most about 73 years)");
    }
    return nanos;
  }

  private static long checkSpan(long capacity, long interval) {
    if (interval > MAX_SPAN_NANOS / capacity) {
      throw new IllegalArgumentException("capacity " + capacity + " at one unit per " + interval
          + " ns takes more than about 73 years to refill; use a smaller capacity or a faster rate");
    }
    return interval;
  }
}
