package dev.tally.internal;

import dev.tally.Decision;
import java.time.ZoneId;

/**
 * A counter per window of fixed length, aligned to the Unix epoch so that every process and
 * host agrees on where windows start without talking to each other.
 *
 * <p>State: {@code s0} the start of the window the count belongs to, {@code s1} the count.
 *
 * <p>Guarantee: at most {@code limit} units per aligned window, exactly. Its known weakness is
 * the edge: up to {@code 2·limit} units can pass within a short span that straddles a window
 * boundary; {@link SlidingWindow} trades exactness for smoothing that edge. {@code retryAfter} of
 * a denied request is the time to the next window (exact: the count is zero there).
 *
 * <p>Debt: a charge counts in the window current when it is decided, up to {@code 2·limit}, and
 * the window refuses everyone until it ends, where the debt is forgiven with the rest of its
 * count. Why the current window and not the one the reservation was taken in: a past window can
 * no longer refuse anyone, so a charge there would cost nothing. Why forgiven: a fixed window
 * promises nothing across its boundary, so carrying the debt would make it a different limit.
 */
final class FixedWindow extends Algorithm {
  static final FixedWindow INSTANCE = new FixedWindow();

  private FixedWindow() {}

  static long windowStart(long now, long window) {
    return now - Math.floorMod(now, window);
  }


  /** The window's start: the state was decided in this window, so never before it. */
  @Override
  long notBefore(long[] r, int o) {
    return r[o + S0];
  }
  @Override
  void normalize(long[] r, int o, long now, ZoneId zone) {
    long start = windowStart(now, r[o + P1]);
    if (r[o + S0] != start) {
      r[o + S0] = start;
      r[o + S1] = 0;
    }
  }

  @Override
  long remaining(long[] r, int o, long now) {
    return Math.max(0, r[o + P0] - r[o + S1]);
  }

  @Override
  long retryAfter(long[] r, int o, long now, long n) {
    long limit = r[o + P0];
    if (n > limit) {
      return Decision.NEVER;
    }
    if (n <= limit - r[o + S1]) {
      return 0;
    }
    return r[o + S0] + r[o + P1] - now;
  }

  @Override
  void consume(long[] r, int o, long now, long n) {
    r[o + S1] += n;
  }

  /** Until the count is {@code 2·limit} (saturating): one limit beyond the window's own. */
  @Override
  long debtRoom(long[] r, int o, long now) {
    return Math.max(0, Arith.saturatedAdd(r[o + P0], r[o + P0]) - r[o + S1]);
  }

  @Override
  void refund(long[] r, int o, long now, long n) {
    r[o + S1] = Math.max(0, r[o + S1] - n);
  }

  @Override
  long resetAfter(long[] r, int o, long now) {
    return r[o + S1] <= 0 ? 0 : r[o + S0] + r[o + P1] - now;
  }

  @Override
  long consumed(long[] r, int o, long now) {
    return r[o + S1];
  }

  @Override
  void restore(long[] r, int o, long now, long consumed, ZoneId zone) {
    r[o + S0] = windowStart(now, r[o + P1]);
    r[o + S1] = Math.min(consumed, r[o + P0]);
  }
}
