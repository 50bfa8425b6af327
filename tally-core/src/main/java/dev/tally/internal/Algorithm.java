package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.TimeSource;
import dev.tally.spi.LimiterRecord;
import java.time.ZoneId;

/**
 * One rate-limiting algorithm as a pure state machine over a slice of a limiter's record.
 *
 * <p>A record is a {@code long[]} that stores keep as they like (a memory cell, a file slot,
 * a Redis hash, a DynamoDB item). Each limit of a limiter owns {@link #WIDTH} consecutive longs:
 *
 * <pre>
 *   [o+0] tag     kind ordinal + 1, in bits 4-7 a bucket's warm-up cold factor
 *                 ({@link WarmingGcra}), and above bit 8 the limits' version (LimiterRecord);
 *                 0 means "no state: the limiter is full"
 *   [o+1] p0      the limit: capacity, burst, window limit, allowance
 *   [o+2] p1      nanoseconds per unit, window length, or the quota's period code
 *   [o+3] s0 ┐
 *   [o+4] s1 ├    the algorithm's state
 *   [o+5] s2 ┘
 * </pre>
 *
 * The parameters live in the record, next to the state, so every process and host that opens
 * the limiter applies the configuration stored with it, not whatever its own code says.
 *
 * <p>Every method takes {@code now} and reads no clock, so a timeline can be scripted exactly;
 * every method is integer arithmetic in nanoseconds, so there is no floating drift. All times
 * returned are durations from {@code now}. {@link #normalize} runs first and brings the state
 * up to {@code now} (rolls windows forward); the rest may then assume it has.
 *
 * <p>{@code now} is nanoseconds since 1970-01-01T00:00Z, from 0 to 2^62 (the year 2116), as
 * {@link TimeSource} gives it. Earlier instants are out of range because a fresh state is all
 * zeros, which a bucket reads as "full since 1970" and a quota as "period ended in 1970"; later
 * ones because a bucket's state may run up to 2^62 ns ahead of {@code now}.
 */
abstract class Algorithm {
  static final int WIDTH = 6;
  static final int TAG = 0;
  static final int P0 = 1;
  static final int P1 = 2;
  static final int S0 = 3;
  static final int S1 = 4;
  static final int S2 = 5;
  /** The kind's bits of a tag word; the rest is the limits' version (see {@link LimiterRecord}). */
  static final long KIND_MASK = (1L << LimiterRecord.VERSION_SHIFT) - 1;

  /** Brings the state up to {@code now}; {@code zone} is the calendar of quotas. */
  abstract void normalize(long[] r, int o, long now, ZoneId zone);

  /**
   * The earliest instant this stored state may be decided at: an instant it was already decided
   * at or after, or {@link Long#MIN_VALUE} if the state does not tell. See
   * {@link LimiterMachine#apply}.
   */
  long notBefore(long[] r, int o) {
    return Long.MIN_VALUE;
  }

  /** Units available now. */
  abstract long remaining(long[] r, int o, long now);

  /** 0 if {@code n} units can be granted now, else when they could be; {@link Decision#NEVER}. */
  abstract long retryAfter(long[] r, int o, long now, long n);

  /**
   * Whether {@code n} units, which fit now ({@link #retryAfter} returned 0), still fit
   * {@code wait} nanoseconds from now if nothing else happens. Most limits only gain room as time
   * passes, so they do; a quota's top-ups end with its period.
   */
  boolean stillFits(long[] r, int o, long now, long n, long wait) {
    return true;
  }

  /** Grants {@code n} units; {@link #retryAfter} has returned 0. */
  abstract void consume(long[] r, int o, long now, long n);

  /**
   * How many units a {@link dev.tally.spi.LimiterOperation#CHARGE charge} may still take now:
   * until the limit stands one full limit below empty, 0 if it already does. A charge of
   * {@code n} consumes {@code min(n, debtRoom)}. See {@link LimiterMachine} on debt.
   */
  abstract long debtRoom(long[] r, int o, long now);

  /** Gives back up to {@code n} units, never beyond the limit. */
  abstract void refund(long[] r, int o, long now, long n);

  /** Until the state is that of a fresh limiter (and can be dropped); 0 if it is already. */
  abstract long resetAfter(long[] r, int o, long now);

  /**
   * Until the state may be dropped: a fresh state would then decide the same. Most algorithms
   * drop it once full ({@link #resetAfter}); a warm-up keeps it while the limiter is warm.
   */
  long keepAfter(long[] r, int o, long now) {
    return resetAfter(r, o, now);
  }

  /**
   * The algorithm whose consumption this one carries over on reconfiguration: itself, or the
   * plain bucket for a bucket with a warm-up, so that turning a warm-up on or off keeps what
   * was consumed.
   */
  Algorithm family() {
    return this;
  }

  /** Units consumed and not yet restored, for reconfiguration. */
  abstract long consumed(long[] r, int o, long now);

  /** Sets the state of a freshly (re)configured limit so that {@code consumed} units are in use. */
  abstract void restore(long[] r, int o, long now, long consumed, ZoneId zone);

  /** The limit in force: the configured one, plus any top-up. */
  long limit(long[] r, int o) {
    return r[o + P0];
  }

  /** The algorithm of a limit kind. */
  static Algorithm of(Limit.Kind kind) {
    switch (kind) {
      case TOKEN_BUCKET:
      case LEAKY_BUCKET:
      case GCRA:
        return Gcra.INSTANCE;
      case FIXED_WINDOW:
        return FixedWindow.INSTANCE;
      case SLIDING_WINDOW:
        return SlidingWindow.INSTANCE;
      case QUOTA:
        return CalendarQuota.INSTANCE;
      default:
        throw new AssertionError(kind);
    }
  }

  /** The algorithm of a limit: its kind's, or the warming bucket for a bucket with a warm-up. */
  static Algorithm of(Limit limit) {
    return limit.coldFactor() != 0 ? WarmingGcra.INSTANCE : of(limit.kind());
  }

  /** Read on every decision: {@code values()} would copy the array each time. */
  private static final Limit.Kind[] KINDS = Limit.Kind.values();

  /** The algorithm of a stored tag. */
  static Algorithm ofTag(long tag) {
    long kindTag = tag & KIND_MASK;
    long factor = kindTag >>> LimiterRecord.COLD_FACTOR_SHIFT;
    if (factor != 0) {
      kindTag &= (1 << LimiterRecord.COLD_FACTOR_SHIFT) - 1;
    }
    for (Limit.Kind kind : KINDS) {
      if (kind.tag() == kindTag && tag >= 0 && tag >>> LimiterRecord.VERSION_SHIFT <= LimiterRecord.MAX_LIMITS_VERSION) {
        Algorithm a = of(kind);
        if (factor == 0) {
          return a;
        }
        if (a == Gcra.INSTANCE && factor >= 2) {
          return WarmingGcra.INSTANCE;
        }
      }
    }
    throw new IllegalStateException("stored limiter state has an unknown algorithm tag " + tag
        + "; it was written by a newer or foreign version");
  }

  /** Writes a limit's tag (with the limits' {@code version}) and parameters, with the state of a full limiter. */
  static void init(long[] r, int o, Limit limit, long version) {
    r[o + TAG] = LimiterRecord.tag(LimiterRecord.limitTag(limit), version);
    r[o + P0] = limit.limit();
    r[o + P1] = limit.intervalNanos();
    r[o + S0] = 0;
    r[o + S1] = limit.warmUpNanos(); // a warm-up's period: see WarmingGcra
    r[o + S2] = 0;
  }
}
