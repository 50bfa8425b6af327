package dev.tally.internal;

import dev.tally.Decision;
import java.time.ZoneId;

/**
 * The sliding window approximated with two fixed windows, as popularised by Cloudflare: the
 * count of the current window plus the previous window's count weighted by the fraction of it
 * that the sliding window still covers.
 *
 * <p>State: {@code s0} the start of the current (epoch-aligned) window, {@code s1} its count,
 * {@code s2} the previous window's count. At {@code e} nanoseconds into a window of length
 * {@code W}, the estimate is {@code ceil(prev·(W-e)/W) + current}, and {@code n} units are
 * granted iff the estimate plus {@code n} is at most the limit. The comparison is done as
 * {@code prev·(W-e) <= (limit-current-n)·W} in 128-bit arithmetic: no division, no rounding,
 * no overflow however large the limit or long the window.
 *
 * <p>Guarantees: never more than {@code limit} per aligned window (the current count alone is
 * bounded), and never more than {@code 2·limit} in any span of length {@code W}; in the steady
 * state it tracks a true sliding window closely without storing timestamps. {@code retryAfter}
 * is exact: the estimate only falls as time passes, and the first instant at which the request
 * fits is computed in closed form, possibly in the next window.
 *
 * <p>Debt: a charge counts in the current window until the estimate is {@code 2·limit}, so the
 * current count may reach {@code 2·limit}. Unlike a fixed window's, the debt is not forgiven at
 * the boundary: the count becomes the next window's previous count and weighs on it as it slides
 * out, so a window charged to {@code 2·limit} refuses a request of {@code n} until
 * {@code (limit - n)/(2·limit)} of the next window is left, and one of the whole limit until
 * that window has passed too. That is the sliding window's point (no edge to reset at), and
 * {@code retryAfter} already finds the instant in the next window ({@code firstFit} with a
 * previous count above the limit answers at most the window's length). The charge lands in the
 * window current when it is decided, for the fixed window's reason.
 */
final class SlidingWindow extends Algorithm {
  static final SlidingWindow INSTANCE = new SlidingWindow();

  private SlidingWindow() {}


  /** The window's start: the state was decided in this window, so never before it. */
  @Override
  long notBefore(long[] r, int o) {
    return r[o + S0];
  }
  @Override
  void normalize(long[] r, int o, long now, ZoneId zone) {
    long window = r[o + P1];
    long start = FixedWindow.windowStart(now, window);
    long stored = r[o + S0];
    if (stored == start) {
      return;
    }
    r[o + S2] = stored == start - window ? r[o + S1] : 0;
    r[o + S1] = 0;
    r[o + S0] = start;
  }

  /** The weighted share of the previous window still inside the sliding window. */
  private static long previousShare(long[] r, int o, long now) {
    long window = r[o + P1];
    long left = window - (now - r[o + S0]);
    return Arith.ceilMulDiv(r[o + S2], left, window);
  }

  @Override
  long remaining(long[] r, int o, long now) {
    return Math.max(0, r[o + P0] - r[o + S1] - previousShare(r, o, now));
  }

  @Override
  long retryAfter(long[] r, int o, long now, long n) {
    long limit = r[o + P0];
    long window = r[o + P1];
    if (n > limit) {
      return Decision.NEVER;
    }
    long elapsed = now - r[o + S0];
    long room = limit - r[o + S1] - n;
    if (room >= 0) {
      long at = firstFit(r[o + S2], room, window); // offset into the current window
      return Math.max(0, at - elapsed);
    }
    // Not in this window: in the next one, the current count becomes the previous.
    long toNext = window - elapsed;
    return toNext + firstFit(r[o + S1], limit - n, window);
  }

  /**
   * The first offset {@code e} into a window at which {@code prev·(W-e) <= room·W}: from
   * {@code W - e <= floor(room·W / prev)}.
   */
  private static long firstFit(long prev, long room, long window) {
    if (prev == 0) {
      return 0;
    }
    long fits = Arith.floorMulDiv(room, window, prev);
    return fits >= window ? 0 : window - fits;
  }

  @Override
  void consume(long[] r, int o, long now, long n) {
    r[o + S1] += n;
  }

  /**
   * Until the estimate ({@code current + previous share}, what {@link #remaining} subtracts) is
   * {@code 2·limit} (saturating): one limit below empty.
   */
  @Override
  long debtRoom(long[] r, int o, long now) {
    long estimate = Arith.saturatedAdd(r[o + S1], previousShare(r, o, now));
    return Math.max(0, Arith.saturatedAdd(r[o + P0], r[o + P0]) - estimate);
  }

  @Override
  void refund(long[] r, int o, long now, long n) {
    r[o + S1] = Math.max(0, r[o + S1] - n);
  }

  @Override
  long resetAfter(long[] r, int o, long now) {
    long end = r[o + S0] + r[o + P1];
    if (r[o + S1] > 0) {
      return end + r[o + P1] - now; // the current count still weighs through the next window
    }
    return r[o + S2] > 0 ? end - now : 0;
  }

  @Override
  long consumed(long[] r, int o, long now) {
    return r[o + S1] + previousShare(r, o, now);
  }

  @Override
  void restore(long[] r, int o, long now, long consumed, ZoneId zone) {
    r[o + S0] = FixedWindow.windowStart(now, r[o + P1]);
    r[o + S1] = Math.min(consumed, r[o + P0]);
    r[o + S2] = 0;
  }
}
