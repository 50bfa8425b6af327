package dev.tally.internal;

import dev.tally.Decision;
import java.time.ZoneId;

/**
 * A bucket that warms up: {@link Gcra} whose units cost more while the limiter is cold.
 *
 * <h2>What cold means when many processes share a limiter</h2>
 *
 * Guava's {@code SmoothWarmingUp} and Sentinel's warm-up keep their coldness in the process that
 * limits. A Tally limiter is shared by every process and host, so its coldness must be read off
 * the state the store holds, which every one of them sees alike: the limiter is <em>cold</em>
 * when the store holds no state for it, or when the bucket has been full (nothing taken) for
 * longer than the warm-up period {@code W}. The first call on a cold limiter, whatever it is,
 * starts its warm-up at that instant {@code t0}; nothing is kept in any process.
 *
 * <h2>The curve</h2>
 *
 * With the bucket's interval {@code T} (nanoseconds per unit at the full rate) and the cold
 * factor {@code k}, a unit taken at {@code now}, {@code e = min(W, now - t0)} into the warm-up,
 * costs
 *
 * <pre>
 *   I(now) = T + ceil((k - 1)·T·(W - e) / W)
 * </pre>
 *
 * nanoseconds: {@code k·T} at the cold start, falling linearly to {@code T} at {@code t0 + W},
 * as the interval between permits falls in Guava's warm-up. Everything else is {@link Gcra}'s,
 * written as GCRA is: the state is the theoretical arrival time {@code fullAt}, the burst
 * tolerance is {@code (C - 1)·T}, and {@code n} units fit at {@code t} iff the arrival of the
 * last of them is within the tolerance:
 *
 * <pre>
 *   max(fullAt - t, 0) + (n - 1)·I(t) <= (C - 1)·T
 * </pre>
 *
 * (with {@code I = T}, exactly the plain bucket's {@code max(fullAt, t) + n·T - t <= C·T}).
 * Taking them moves {@code fullAt} to {@code max(fullAt, t) + n·I(t)}. So a full cold bucket
 * grants a burst of {@code 1 + floor((C - 1)/k)} units (never none: a cold bucket of one unit
 * still grants one), then one unit every {@code I(t)}: {@code 1/k} of the rate at the cold
 * start, the full rate after {@code W}. The rounding is up, so a warming limiter never grants
 * faster than its curve.
 *
 * <h2>State</h2>
 *
 * {@code s0} is {@code fullAt}; {@code s1} the warm-up period {@code W} (a parameter, stored
 * next to p0 and p1); {@code s2} the instant {@code t0} the current warm-up started. The cold
 * factor rides in the tag word (see {@code LimiterRecord}). A fresh record holds
 * {@code fullAt = 0}: full since 1970, so cold. Unlike the plain bucket, a full {@code fullAt}
 * is not moved up to {@code now}: how long the bucket has been full is what tells it cold. The
 * state is kept until the limiter is cold again ({@link #keepAfter}), and dropped then, since
 * a cold state decides as no state does.
 *
 * <h2>Debt</h2>
 *
 * A charge takes the bucket negative, as it does a plain one, and the bound is a bound on time:
 * {@code fullAt} may reach {@code (C - 1)·T + I(now) + C·T} past {@code now}, one warm refill
 * ({@code C·T}) beyond where the bucket is empty. Why in time and not in units: a cold unit costs
 * up to {@code k} times a warm one, so "{@code C} units below empty" would let a cold limiter's
 * debt delay it {@code k} times longer than a warm one's, and the units a debt is measured in
 * change as the limiter warms while it is being repaid. Bounded in time, a debt never delays a
 * warming bucket longer than it would a plain one; while cold, fewer units fit in it, since each
 * costs more. A charge costs what a grant at that instant costs ({@code I(now)} a unit), and the
 * bound keeps {@code fullAt - now} below {@code 2^62} ({@code C·k·T ≤ 2^61}).
 *
 * <h2>Guarantees</h2>
 *
 * <ul>
 *   <li>{@code retryAfter} is exact: the fit condition only gets easier as time passes (both
 *       {@code fullAt - t} and {@code I(t)} fall), and no warm-up restarts before the request
 *       fits (the bucket is never cold before {@code fullAt + W}, by which time it fits), so the
 *       first instant it fits is found by bisection over at most 62 steps.
 *   <li>{@code C·k·T <= 2^61} is checked when the limit is made, so {@code n·I} never overflows,
 *       and {@code (k - 1)·T·(W - e)} is taken in 128 bits.
 * </ul>
 */
final class WarmingGcra extends Algorithm {
  static final WarmingGcra INSTANCE = new WarmingGcra();

  private WarmingGcra() {}

  @Override
  Algorithm family() {
    return Gcra.INSTANCE;
  }

  /** The cold factor stored in a tag word. */
  static long coldFactor(long tag) {
    return (tag & KIND_MASK) >>> dev.tally.spi.LimiterRecord.COLD_FACTOR_SHIFT;
  }

  /** What one unit costs at {@code now}: see the class comment. */
  static long cost(long[] r, int o, long now) {
    long interval = r[o + P1];
    long period = r[o + S1];
    long e = Math.min(period, Math.max(0, now - r[o + S2]));
    return interval + Arith.ceilMulDiv((coldFactor(r[o + TAG]) - 1) * interval, period - e, period);
  }

  @Override
  void normalize(long[] r, int o, long now, ZoneId zone) {
    if (now - r[o + S0] > r[o + S1]) { // cold: this call starts a warm-up
      r[o + S0] = now;
      r[o + S2] = now;
    }
  }

  @Override
  long remaining(long[] r, int o, long now) {
    long cost = cost(r, o, now);
    long room = (r[o + P0] - 1) * r[o + P1] + cost - Math.max(0, r[o + S0] - now);
    return room <= 0 ? 0 : room / cost;
  }

  /** Whether {@code n} units fit at {@code at}: see the class comment. */
  private static boolean fits(long[] r, int o, long at, long n) {
    long cost = cost(r, o, at);
    return Math.max(0, r[o + S0] - at) + n * cost <= (r[o + P0] - 1) * r[o + P1] + cost;
  }

  @Override
  long retryAfter(long[] r, int o, long now, long n) {
    if (n > r[o + P0]) {
      return Decision.NEVER;
    }
    if (fits(r, o, now, n)) {
      return 0;
    }
    // It fits once full and warm, and not before now: bisect for the first instant it does.
    long lo = now;
    long hi = Math.max(r[o + S0], r[o + S2] + r[o + S1]);
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      if (fits(r, o, mid, n)) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi - now;
  }

  /**
   * Until {@code fullAt} stands {@code (C - 1)·T + I + C·T} ahead: as far as a plain bucket may be
   * charged ({@code 2·C·T}, when warm, {@code I = T}), in units of what one costs now.
   */
  @Override
  long debtRoom(long[] r, int o, long now) {
    long cost = cost(r, o, now);
    long room = (2 * r[o + P0] - 1) * r[o + P1] + cost - Math.max(0, r[o + S0] - now);
    return room <= 0 ? 0 : room / cost;
  }

  @Override
  void consume(long[] r, int o, long now, long n) {
    r[o + S0] = Math.max(r[o + S0], now) + n * cost(r, o, now);
  }

  @Override
  void refund(long[] r, int o, long now, long n) {
    if (r[o + S0] > now) { // a full bucket has nothing to take back, and stays as long full
      long back = Math.min(n, 2 * r[o + P0]) * cost(r, o, now); // up to a full bucket's worth of debt too
      r[o + S0] = Math.max(now, r[o + S0] - back);
    }
  }

  @Override
  long resetAfter(long[] r, int o, long now) {
    return Math.max(0, r[o + S0] - now);
  }

  /** Until cold: a nanosecond past {@code fullAt + W}. */
  @Override
  long keepAfter(long[] r, int o, long now) {
    return Math.max(0, r[o + S0] - now + r[o + S1] + 1);
  }

  @Override
  long consumed(long[] r, int o, long now) {
    long ahead = Math.max(0, r[o + S0] - now);
    long cost = cost(r, o, now);
    return ahead / cost + (ahead % cost == 0 ? 0 : 1);
  }

  /** A reconfigured bucket keeps what it had consumed, and counts as warm. */
  @Override
  void restore(long[] r, int o, long now, long consumed, ZoneId zone) {
    r[o + S0] = now + Math.min(consumed, r[o + P0]) * r[o + P1];
    r[o + S2] = now - r[o + S1];
  }
}
