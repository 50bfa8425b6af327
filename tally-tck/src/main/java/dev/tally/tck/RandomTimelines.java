package dev.tally.tck;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.spi.LimiterOperation;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The draws of {@link LimiterVectors}' random limiter timelines: the limits, operations, permits
 * and clock steps that drive {@link dev.tally.internal.LimiterMachine} and every store, which must
 * agree call for call.
 * The draws favour edges: counts and spans near powers of two and the 64-bit limits, zones with
 * odd offsets and daylight saving, permits of 0, the limit and one past it, and clocks that step
 * back.
 */
public final class RandomTimelines {
  private static final long NS = 1_000_000_000L;

  /** Zones with whole, half and quarter hour offsets, and with and without daylight saving. */
  public static final List<ZoneId> ZONES = List.of(ZoneOffset.UTC, ZoneId.of("Europe/Paris"),
      ZoneId.of("America/New_York"), ZoneId.of("Australia/Lord_Howe"), ZoneId.of("Asia/Kolkata"),
      ZoneId.of("Pacific/Chatham"), ZoneId.of("UTC"));

  private RandomTimelines() {}

  /** One to three limits of any kind. */
  public static List<Limit> limits(SplittableRandom rnd) {
    int n = 1 + (rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(2) : 0);
    List<Limit> limits = new ArrayList<>();
    while (limits.size() < n) {
      try {
        limits.add(limit(rnd));
      } catch (IllegalArgumentException tooBig) {
        // a bucket over 73 years: draw again
      }
    }
    return limits;
  }

  private static final long[] COUNTS = {1, 2, 3, 7, 20, 100, 1000, 86_400, 1_000_000_007L, 1_000_000_000_000L,
      4_000_000_000_000L, 1L << 40, 1L << 53, (1L << 53) + 1, 1L << 61};
  private static final long[] NANOS = {1, 7, 999, 1_000_000, 999_999_999, NS, NS + 1, 1_500_000_000L, 60 * NS,
      3_600 * NS, 86_400 * NS, 365 * 86_400 * NS, 3650L * 86_400 * NS, 1L << 53, (1L << 61) - 1, 1L << 61};

  private static Limit limit(SplittableRandom rnd) {
    Limit l = plainLimit(rnd);
    if (rnd.nextInt(5) == 0 && l.kind() != Limit.Kind.FIXED_WINDOW && l.kind() != Limit.Kind.SLIDING_WINDOW
        && l.kind() != Limit.Kind.QUOTA) {
      return withWarmUp(rnd, l);
    }
    return l;
  }

  /** Cold factors: the least, Guava's and Sentinel's, and the most. */
  private static final int[] FACTORS = {2, 3, 3, 7, Limit.MAX_COLD_FACTOR};

  /**
   * {@code bucket} with a warm-up drawn near its own interval and the edges: a nanosecond, a few
   * intervals, a second, an hour, up to 2^61. A cold bucket too big to fit throws, as a bucket
   * over 73 years does.
   */
  public static Limit withWarmUp(SplittableRandom rnd, Limit bucket) {
    long t = bucket.intervalNanos();
    long[] periods = {1, 999, Math.max(1, t / 2), t, 3 * Math.min(t, 1L << 59), NS, 60 * NS, 3_600 * NS, 1L << 53,
        1L << 61};
    long period = periods[rnd.nextInt(periods.length)];
    return bucket.warmUp(Duration.ofNanos(period), FACTORS[rnd.nextInt(FACTORS.length)]);
  }

  /**
   * The handles of a warm-up timeline: one bucket with a warm-up, and that bucket plain or with
   * another warm-up, so that reconfiguring turns the warm-up on, off or changes it.
   */
  public static List<List<Limit>> warmUpLimits(SplittableRandom rnd) {
    while (true) {
      try {
        long c = rnd.nextInt(3) == 0 ? COUNTS[rnd.nextInt(COUNTS.length)] : 1L + rnd.nextInt(30);
        long[] intervals = {1, 7, 1_000_000, 10_000_000, NS, 60 * NS, 3_600 * NS};
        Duration d = Duration.ofNanos(intervals[rnd.nextInt(intervals.length)] * Math.min(c, 1L << 20));
        Limit bucket = switch (rnd.nextInt(3)) {
          case 0 -> Limit.tokenBucket(c, d);
          case 1 -> Limit.leakyBucket(c, d);
          default -> Limit.gcra(c - 1, c, d);
        };
        Limit warm = withWarmUp(rnd, bucket);
        return List.of(List.of(warm), List.of(bucket), List.of(withWarmUp(rnd, bucket)), List.of(warm, bucket));
      } catch (IllegalArgumentException tooBig) {
        // draw again
      }
    }
  }

  /**
   * How far to move the clock in a warm-up timeline on {@code limit} (the one with a warm-up):
   * within an interval, a fraction of the warm-up, to its end, past the instant the limiter is
   * cold again, to the decision's wait, or back.
   */
  public static long warmUpAdvance(SplittableRandom rnd, Limit limit, Decision last, long now) {
    long far = Math.max(0, (1L << 62) - now);
    long w = limit.warmUpNanos();
    long t = limit.intervalNanos();
    long wait = last == null ? 0 : last.allowed() ? last.resetAfterNanos() : last.retryAfterNanos();
    long step = switch (rnd.nextInt(9)) {
      case 0 -> 0;
      case 1 -> 1 + rnd.nextLong(Math.min(t, 1L << 40) * 2);
      case 2 -> 1 + rnd.nextLong(Math.max(1, w / 8));
      case 3 -> w;
      case 4 -> w + rnd.nextInt(2) + (last == null ? 0 : last.resetAfterNanos()); // idle: cold again, or not yet
      case 5 -> wait > 0 ? wait - rnd.nextInt(2) : 1;
      case 6 -> w / 2;
      case 7 -> -rnd.nextLong(1, Math.max(2, Math.min(now, 1_000_000))); // a clock behind
      default -> 1;
    };
    return Math.min(far, step);
  }

  private static Limit plainLimit(SplittableRandom rnd) {
    long count = COUNTS[rnd.nextInt(COUNTS.length)];
    long small = 1L + rnd.nextInt(30);
    long c = rnd.nextBoolean() ? small : count;
    Duration d = Duration.ofNanos(NANOS[rnd.nextInt(NANOS.length)]);
    switch (rnd.nextInt(7)) {
      case 0:
        return Limit.tokenBucket(c, d);
      case 1:
        return Limit.tokenBucket(c, 1 + rnd.nextInt(5), d);
      case 2:
        return Limit.leakyBucket(c, d);
      case 3:
        return Limit.gcra(c - 1, Math.max(1, c / 2), d);
      case 4:
        return Limit.fixedWindow(rnd.nextInt(8) == 0 ? Long.MAX_VALUE : c, d);
      case 5:
        return Limit.slidingWindow(c, d);
      default:
        return Limit.quota(c, rnd.nextBoolean() ? Limit.Period.DAY : Limit.Period.MONTH,
            ZONES.get(rnd.nextInt(ZONES.size())));
    }
  }

  /**
   * A version for a handle's limits: mostly small ones, so that handles meet older, newer and
   * equal versions, and now and then the largest, to check exact arithmetic where a store
   * computes in doubles.
   */
  public static long version(SplittableRandom rnd) {
    int pick = rnd.nextInt(8);
    return pick == 7 ? dev.tally.spi.LimiterRecord.MAX_LIMITS_VERSION : pick % 4;
  }

  /** An operation, acquires most often; charges one time in twenty. */
  public static LimiterOperation operation(SplittableRandom rnd) {
    int x = rnd.nextInt(100);
    if (x < 48) {
      return LimiterOperation.ACQUIRE;
    } else if (x < 62) {
      return LimiterOperation.PEEK;
    } else if (x < 75) {
      return LimiterOperation.REFUND;
    } else if (x < 79) {
      return LimiterOperation.RESET;
    } else if (x < 87) {
      return LimiterOperation.RECONFIGURE;
    } else if (x < 95) {
      return LimiterOperation.TOP_UP;
    }
    return LimiterOperation.CHARGE;
  }

  /**
   * Permits for a charge on one of {@code limits}: as {@link #permits} two times in three (within
   * the debt's room, or past it once the limiter is in debt), else past any limit's bound from
   * full: two or three times the limit, or {@link Long#MAX_VALUE}.
   */
  public static long chargePermits(SplittableRandom rnd, List<Limit> limits) {
    if (rnd.nextInt(3) != 0) {
      return permits(rnd, limits);
    }
    long limit = limits.get(rnd.nextInt(limits.size())).limit();
    int x = rnd.nextInt(4);
    if (x == 3) {
      return Long.MAX_VALUE;
    }
    long times = 2L + (x & 1);
    return limit > Long.MAX_VALUE / times ? Long.MAX_VALUE : times * limit;
  }

  /** Permits for one of {@code limits}: 0, 1, the limit, one past it, or between. */
  public static long permits(SplittableRandom rnd, List<Limit> limits) {
    long limit = limits.get(rnd.nextInt(limits.size())).limit();
    switch (rnd.nextInt(8)) {
      case 0:
        return 0;
      case 1:
      case 2:
        return 1;
      case 3:
        return limit;
      case 4:
        return limit == Long.MAX_VALUE ? limit : limit + 1;
      case 5:
        return 1 + rnd.nextLong(Math.min(limit, 1L << 62) + 1);
      case 6:
        return Math.max(1, limit / 2);
      default:
        return 1L + rnd.nextInt(5);
    }
  }

  /**
   * How far to move the clock after {@code last} at {@code now}: not at all, a nanosecond, to
   * just before the decision's wait ends, up to 40 days, or back.
   */
  public static long advance(SplittableRandom rnd, Decision last, long now) {
    long wait = last == null ? 0 : last.allowed() ? last.resetAfterNanos() : last.retryAfterNanos();
    // Keep the clock below 2^62 (the year 2116), where no sum of an instant and a span can
    // overflow the core's 64-bit arithmetic.
    long far = Math.max(0, (1L << 62) - now);
    switch (rnd.nextInt(10)) {
      case 0:
      case 1:
      case 2:
        return 0;
      case 3:
        return 1;
      case 4:
        return wait > 0 && wait < far ? wait - rnd.nextInt(2) : 1;
      case 5:
        return rnd.nextLong(NS);
      case 6:
        return rnd.nextLong(3_600 * NS);
      case 7:
        return Math.min(far, rnd.nextLong(40L * 86_400 * NS));
      case 8:
        return Math.min(far, last == null ? 0 : last.resetAfterNanos());
      default: // or back: a clock that stepped back, or a caller whose clock is behind
        return rnd.nextBoolean() ? rnd.nextLong(1_000_000) : -rnd.nextLong(1, Math.max(2, Math.min(now, NS)));
    }
  }
}
