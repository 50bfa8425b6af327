package dev.tally.internal;

import dev.tally.Limit;
import dev.tally.Quota;
import static dev.tally.internal.Timelines.NEVER;
import static dev.tally.internal.Timelines.SECOND;
import static dev.tally.internal.Timelines.big;

import dev.tally.spi.LimiterOperation;
import java.math.BigInteger;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongPredicate;

/**
 * Straightforward models of each limit, written from the definitions rather than from the
 * algorithms: tokens as an exact rational, a count per window, a count per calendar period. They
 * use arbitrary-precision arithmetic and keep whatever history they like, so they are slow and
 * obviously right; the machine must agree with them on every call.
 */
final class ReferenceModels {
  private ReferenceModels() {}

  /** What a call should answer. */
  record Expected(boolean allowed, long remaining, long limit, long retryAfter, long resetAfter) {}

  /** A limit's model; calls come with non-decreasing {@code now}. */
  interface Model {
    Expected apply(long now, LimiterOperation op, long permits);
  }

  static Model of(Limit l) {
    switch (l.kind()) {
      case TOKEN_BUCKET:
      case LEAKY_BUCKET:
      case GCRA:
        return new TokenBucket(l.limit(), l.intervalNanos());
      case FIXED_WINDOW:
        return new FixedWindow(l.limit(), l.intervalNanos());
      case SLIDING_WINDOW:
        return new SlidingWindow(l.limit(), l.intervalNanos());
      case QUOTA:
        return new Quota(l.limit(), l.period(), l.zone());
      default:
        throw new AssertionError(l.kind());
    }
  }

  /** Twice {@code limit}, or {@link Long#MAX_VALUE} if more: how far a charge may count. */
  static long twice(long limit) {
    return big(limit).shiftLeft(1).min(big(Long.MAX_VALUE)).longValueExact();
  }

  private static long toLong(BigInteger v) {
    return v.longValueExact();
  }

  /**
   * A token bucket of {@code C} tokens refilled one token per {@code T} ns, starting full. Tokens
   * are the exact rational {@code scaled / T}: {@code t} nanoseconds add {@code t} to
   * {@code scaled}, never beyond {@code C·T}; n tokens are granted iff {@code scaled >= n·T}.
   */
  static final class TokenBucket implements Model {
    private final BigInteger capacity;
    private final BigInteger interval;
    private final BigInteger full;
    private BigInteger scaled;
    private long last;

    TokenBucket(long capacity, long interval) {
      this.capacity = big(capacity);
      this.interval = big(interval);
      this.full = this.capacity.multiply(this.interval);
      this.scaled = full;
      this.last = Long.MIN_VALUE;
    }

    @Override
    public Expected apply(long now, LimiterOperation op, long permits) {
      if (last != Long.MIN_VALUE) {
        scaled = scaled.add(big(now).subtract(big(last))).min(full);
      }
      last = now;
      boolean allowed = true;
      long retry = 0;
      switch (op) {
        case ACQUIRE:
        case PEEK:
          long n = op == LimiterOperation.PEEK ? 1 : permits;
          if (n > 0) {
            BigInteger need = big(n).multiply(interval);
            if (big(n).compareTo(capacity) > 0) {
              allowed = false;
              retry = NEVER;
            } else if (scaled.compareTo(need) >= 0) {
              if (op == LimiterOperation.ACQUIRE) {
                scaled = scaled.subtract(need);
              }
            } else {
              allowed = false;
              retry = toLong(need.subtract(scaled)); // one scaled unit comes back per nanosecond
            }
          }
          break;
        case REFUND:
          scaled = scaled.add(big(permits).multiply(interval)).min(full);
          break;
        case CHARGE: // tokens go negative, down to -C, never below
          if (permits > 0) {
            BigInteger room = scaled.add(full).divide(interval).max(BigInteger.ZERO);
            scaled = scaled.subtract(big(permits).min(room).multiply(interval));
          }
          break;
        case RESET:
          scaled = full;
          break;
        default:
          throw new AssertionError(op);
      }
      return new Expected(allowed, toLong(scaled.max(BigInteger.ZERO).divide(interval)), toLong(capacity), retry,
          toLong(full.subtract(scaled)));
    }
  }

  /** A count per epoch-aligned window of {@code W} ns; n are granted iff count + n <= limit. */
  static final class FixedWindow implements Model {
    private final long limit;
    private final long window;
    private final Map<Long, Long> counts = new HashMap<>();

    FixedWindow(long limit, long window) {
      this.limit = limit;
      this.window = window;
    }

    @Override
    public Expected apply(long now, LimiterOperation op, long permits) {
      long index = Math.floorDiv(now, window);
      long end = (index + 1) * window; // inside the time range, so no overflow
      long count = counts.getOrDefault(index, 0L);
      boolean allowed = true;
      long retry = 0;
      switch (op) {
        case ACQUIRE:
        case PEEK:
          long n = op == LimiterOperation.PEEK ? 1 : permits;
          if (n > 0 && big(count).add(big(n)).compareTo(big(limit)) > 0) {
            allowed = false;
            retry = n > limit ? NEVER : end - now;
          } else if (op == LimiterOperation.ACQUIRE) {
            count += n;
          }
          break;
        case REFUND:
          count = Math.max(0, count - permits);
          break;
        case CHARGE: // counted in this window, up to twice the limit
          if (permits > 0) {
            count += Math.max(0, Math.min(permits, twice(limit) - count));
          }
          break;
        case RESET:
          counts.clear();
          count = 0;
          break;
        default:
          throw new AssertionError(op);
      }
      counts.put(index, count);
      return new Expected(allowed, Math.max(0, limit - count), limit, retry, count > 0 ? end - now : 0);
    }
  }

  /**
   * Counts per epoch-aligned window of {@code W} ns; at {@code e} ns into window {@code i} the
   * estimate is {@code ceil(count[i-1]·(W-e)/W) + count[i]}, and n are granted iff estimate + n
   * is at most the limit. Retry-after is found by searching for the first instant the request
   * would fit.
   */
  static final class SlidingWindow implements Model {
    private final long limit;
    private final long window;
    private final Map<Long, Long> counts = new HashMap<>();

    SlidingWindow(long limit, long window) {
      this.limit = limit;
      this.window = window;
    }

    private BigInteger estimate(long t) {
      long index = Math.floorDiv(t, window);
      return share(counts.getOrDefault(index - 1, 0L), t - index * window)
          .add(big(counts.getOrDefault(index, 0L)));
    }

    /** {@code ceil(prev·(W-e)/W)}. */
    private BigInteger share(long prev, long elapsed) {
      long left = window - elapsed;
      if (Math.multiplyHigh(prev, left) == 0 && prev * left >= 0) { // the product fits a long
        long p = prev * left;
        return big(p / window + (p % window == 0 ? 0 : 1));
      }
      BigInteger[] qr = big(prev).multiply(big(left)).divideAndRemainder(big(window));
      return qr[1].signum() == 0 ? qr[0] : qr[0].add(BigInteger.ONE);
    }

    private boolean fits(long t, long n) {
      return estimate(t).add(big(n)).compareTo(big(limit)) <= 0;
    }

    @Override
    public Expected apply(long now, LimiterOperation op, long permits) {
      long index = Math.floorDiv(now, window);
      long count = counts.getOrDefault(index, 0L);
      boolean allowed = true;
      long retry = 0;
      switch (op) {
        case ACQUIRE:
        case PEEK:
          long n = op == LimiterOperation.PEEK ? 1 : permits;
          if (n > 0 && !fits(now, n)) {
            allowed = false;
            retry = n > limit ? NEVER : firstFit(now, n) - now;
          } else if (op == LimiterOperation.ACQUIRE) {
            count += n;
          }
          break;
        case REFUND:
          count = Math.max(0, count - permits);
          break;
        case CHARGE: // counted in this window until the estimate is twice the limit
          if (permits > 0) {
            BigInteger room = big(twice(limit)).subtract(estimate(now).min(big(Long.MAX_VALUE)));
            count += big(permits).min(room.max(BigInteger.ZERO)).longValueExact();
          }
          break;
        case RESET:
          counts.clear();
          count = 0;
          break;
        default:
          throw new AssertionError(op);
      }
      counts.put(index, count);
      long remaining = big(limit).subtract(estimate(now)).max(BigInteger.ZERO).longValueExact();
      long start = index * window;
      long prev = counts.getOrDefault(index - 1, 0L);
      long reset = count > 0 ? start + 2 * window - now : prev > 0 ? start + window - now : 0;
      return new Expected(allowed, remaining, limit, retry, reset);
    }

    /**
     * The first instant after {@code now} at which {@code n} would fit, if nothing else happens.
     * Two windows on, both counts weigh nothing, so it lies in {@code (now, start + 2W]}.
     */
    private long firstFit(long now, long n) {
      long index = Math.floorDiv(now, window);
      long[] count = { // windows index - 1 .. index + 1; nothing happens while we look
          counts.getOrDefault(index - 1, 0L), counts.getOrDefault(index, 0L), 0};
      LongPredicate fits = t -> {
        long i = Math.floorDiv(t, window);
        long prev = count[(int) (i - index)];
        long cur = i - index + 1 < 3 ? count[(int) (i - index + 1)] : 0;
        return share(prev, t - i * window).add(big(cur)).add(big(n)).compareTo(big(limit)) <= 0;
      };
      long lo = now; // does not fit
      long hi = index * window + 2 * window; // both counts weigh nothing: fits
      if (!fits.test(hi)) {
        throw new AssertionError("a request of " + n + " does not fit two windows on");
      }
      while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (fits.test(mid)) {
          hi = mid;
        } else {
          lo = mid;
        }
      }
      return hi;
    }
  }

  /**
   * An allowance per calendar period in a zone: a map from the period (its first day) to units
   * used and topped up. A period runs from the instant its first day starts in the zone (as
   * {@link LocalDate#atStartOfDay(ZoneId)} has it) to the instant the next one starts; each
   * instant belongs to the last period that started at or before it.
   */
  static final class Quota implements Model {
    private final long allowance;
    private final Limit.Period period;
    private final ZoneId zone;
    private final Map<LocalDate, long[]> periods = new HashMap<>();

    Quota(long allowance, Limit.Period period, ZoneId zone) {
      this.allowance = allowance;
      this.period = period;
      this.zone = zone;
    }

    static long startOf(LocalDate first, ZoneId zone) {
      Instant start = first.atStartOfDay(zone).toInstant();
      return Math.addExact(Math.multiplyExact(start.getEpochSecond(), SECOND), start.getNano());
    }

    private static LocalDate next(LocalDate first, Limit.Period period) {
      return period == Limit.Period.DAY ? first.plusDays(1) : first.plusMonths(1);
    }

    /** The first day of the period that {@code now} belongs to. */
    static LocalDate periodOf(long now, Limit.Period period, ZoneId zone) {
      LocalDate day = Instant.ofEpochSecond(Math.floorDiv(now, SECOND), Math.floorMod(now, SECOND))
          .atZone(zone).toLocalDate();
      LocalDate first = period == Limit.Period.DAY ? day : day.withDayOfMonth(1);
      while (startOf(next(first, period), zone) <= now) {
        first = next(first, period);
      }
      while (startOf(first, zone) > now) {
        first = period == Limit.Period.DAY ? first.minusDays(1) : first.minusMonths(1);
      }
      return first;
    }

    /** When the period after the one containing {@code now} starts. */
    static long nextStart(long now, Limit.Period period, ZoneId zone) {
      return startOf(next(periodOf(now, period, zone), period), zone);
    }

    /** {@code a + b}, or {@link Long#MAX_VALUE} if more. */
    private static long capped(long a, long b) {
      return big(a).add(big(b)).min(big(Long.MAX_VALUE)).longValueExact();
    }

    @Override
    public Expected apply(long now, LimiterOperation op, long permits) {
      LocalDate first = periodOf(now, period, zone);
      long end = startOf(next(first, period), zone);
      long[] p = periods.computeIfAbsent(first, k -> new long[2]); // used, topped up
      long limit = capped(allowance, p[1]);
      boolean allowed = true;
      long retry = 0;
      switch (op) {
        case ACQUIRE:
        case PEEK:
          long n = op == LimiterOperation.PEEK ? 1 : permits;
          if (n > 0 && big(p[0]).add(big(n)).compareTo(big(limit)) > 0) {
            allowed = false;
            retry = n > allowance ? NEVER : end - now; // a fresh period has the allowance
          } else if (op == LimiterOperation.ACQUIRE) {
            p[0] += n;
          }
          break;
        case REFUND:
          p[0] = Math.max(0, p[0] - permits);
          break;
        case CHARGE: // counted in this period until used is twice the limit in force
          if (permits > 0) {
            p[0] += Math.max(0, Math.min(permits, capped(limit, limit) - p[0]));
          }
          break;
        case TOP_UP:
          p[1] = capped(p[1], permits);
          limit = capped(allowance, p[1]);
          break;
        case RESET:
          periods.clear();
          p = new long[2];
          limit = allowance;
          break;
        default:
          throw new AssertionError(op);
      }
      long reset = p[0] > 0 || p[1] > 0 ? end - now : 0;
      return new Expected(allowed, Math.max(0, limit - p[0]), limit, retry, reset);
    }
  }
}
