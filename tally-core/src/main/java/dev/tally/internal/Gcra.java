package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import java.time.ZoneId;

/**
 * The token bucket, the leaky bucket and GCRA: one algorithm under three names.
 *
 * <h2>Why one</h2>
 *
 * A token bucket of capacity {@code C} refilled at one token every {@code T} nanoseconds, a
 * leaky bucket (as a meter) {@code C} deep draining one unit every {@code T}, and the generic
 * cell rate algorithm with emission interval {@code T} and burst tolerance {@code C·T} admit
 * exactly the same request sequences: they differ in what they call full and empty. Writing it
 * once means the three cannot drift apart, and every store has one script to get right.
 *
 * <h2>The state is one instant</h2>
 *
 * Instead of a token count and a last-refill time (two values that must change together, and a
 * division that drifts), the state is {@code fullAt}: the instant at which the bucket will be
 * full again (for the leaky bucket: empty again; for GCRA: the theoretical arrival time). At
 * {@code now} the bucket holds {@code (C·T - (fullAt - now)) / T} tokens. Taking {@code n}
 * tokens moves {@code fullAt} to {@code max(fullAt, now) + n·T}, and is allowed iff that is at
 * most {@code C·T} ahead of {@code now}. Refill is smooth and exact: no rounding accumulates,
 * because time is never converted to tokens and back.
 *
 * <h2>Guarantees</h2>
 *
 * <ul>
 *   <li>In any interval of length {@code D} at most {@code C + D/T} units are granted (the burst
 *       plus the refill), whatever the interleaving; {@code T} is rounded up from the configured
 *       rate, so it is never faster than asked.
 *   <li>{@code retryAfter} is exact: at {@code now + retryAfter} the same request is allowed, a
 *       nanosecond earlier it is not.
 *   <li>{@code fullAt} is never more than {@code 2·C·T ≤ 2^62} ahead of {@code now} ({@code C·T
 *       ≤ 2^61} is checked when the {@link Limit} is made; the second {@code C·T} is a charge's
 *       debt), so {@code fullAt} stays below 2^63 for any {@code now} below 2^62 (the year
 *       2116), and every formula works on {@code fullAt - now}, never on {@code fullAt + n·T}.
 * </ul>
 *
 * <h2>Debt</h2>
 *
 * A charge (the settlement of a reservation that cost more than it held) is granted whatever is
 * left, and the bucket goes negative: {@code fullAt} moves past {@code now + C·T}. Nothing else
 * changes: the bucket refills at its rate, so a debt of {@code d} units delays the next grant by
 * exactly {@code d·T} beyond what an empty bucket would wait, and the debt is paid back by time
 * alone, the way a token bucket with a negative balance is. Why bounded at {@code C} units below
 * empty: an unbounded debt would let one misestimated settlement lock a limiter out for hours,
 * while a bucket can never have granted more than a full bucket's worth ahead of its rate, so a
 * debt beyond that is a cost the limiter never allowed and should not be made to wait for.
 */
final class Gcra extends Algorithm {
  static final Gcra INSTANCE = new Gcra();

  private Gcra() {}

  @Override
  void normalize(long[] r, int o, long now, ZoneId zone) {
    if (r[o + S0] < now) {
      r[o + S0] = now; // full: time spent full earns nothing
    }
  }

  @Override
  long remaining(long[] r, int o, long now) {
    return remaining(r[o + P0], r[o + P1], r[o + S0], now);
  }

  static long remaining(long capacity, long interval, long fullAt, long now) {
    long ahead = Math.max(0, fullAt - now);
    long room = capacity * interval - ahead;
    return room <= 0 ? 0 : room / interval;
  }

  @Override
  long retryAfter(long[] r, int o, long now, long n) {
    return retryAfter(r[o + P0], r[o + P1], r[o + S0], now, n);
  }

  static long retryAfter(long capacity, long interval, long fullAt, long now, long n) {
    if (n > capacity) {
      return Decision.NEVER;
    }
    // ahead first: in debt fullAt may be 2·C·T past a now near 2^62, and fullAt + n·T would wrap
    long excess = Math.max(0, fullAt - now) + n * interval - capacity * interval;
    return Math.max(0, excess);
  }

  @Override
  long debtRoom(long[] r, int o, long now) {
    return debtRoom(r[o + P0], r[o + P1], r[o + S0], now);
  }

  /**
   * {@link #remaining}'s numerator with one more capacity of room: the bucket may be charged
   * until {@code fullAt} stands {@code 2·C·T} ahead, {@code C} tokens below empty. Only at the
   * very end of the time range ({@code now = 2^62} with {@code C·T = 2^61}) would that pass
   * {@link Long#MAX_VALUE}, so {@code fullAt} stops there.
   */
  static long debtRoom(long capacity, long interval, long fullAt, long now) {
    long room = Math.min(2 * capacity * interval, Long.MAX_VALUE - now) - Math.max(0, fullAt - now);
    return room <= 0 ? 0 : room / interval;
  }

  @Override
  void consume(long[] r, int o, long now, long n) {
    r[o + S0] = Math.max(r[o + S0], now) + n * r[o + P1];
  }

  @Override
  void refund(long[] r, int o, long now, long n) {
    long back = Math.min(n, 2 * r[o + P0]) * r[o + P1]; // up to a full bucket's worth of debt too
    r[o + S0] = Math.max(now, r[o + S0] - back);
  }

  @Override
  long resetAfter(long[] r, int o, long now) {
    return Math.max(0, r[o + S0] - now);
  }

  @Override
  long consumed(long[] r, int o, long now) {
    long ahead = Math.max(0, r[o + S0] - now);
    return ahead / r[o + P1] + (ahead % r[o + P1] == 0 ? 0 : 1);
  }

  @Override
  void restore(long[] r, int o, long now, long consumed, ZoneId zone) {
    r[o + S0] = now + Math.min(consumed, r[o + P0]) * r[o + P1];
  }
}
