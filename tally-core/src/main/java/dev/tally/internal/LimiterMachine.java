package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import static dev.tally.internal.Algorithm.WIDTH;

import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import java.time.ZoneId;
import java.util.List;

/**
 * A limiter's state machine: its limits composed so that a request is granted by all of them or
 * consumes from none.
 *
 * <p>Composition is two-phase: every limit is asked when the request would fit
 * ({@link Algorithm#retryAfter}) before any consumes, so "100 per minute and 10 per second"
 * never spends a minute token on a request the second limit refuses. The decision reports the
 * most restrictive limit.
 *
 * <p><b>Whose limits decide.</b> The limits are stored with the state, with the version of the
 * configuration that wrote them ({@link LimiterRecord}); a caller's limits carry a version too
 * (0 when it set none). When the stored limits differ from the caller's:
 *
 * <ul>
 *   <li>the caller's version is newer: its limits replace the stored ones, keeping what was
 *       consumed (as {@link LimiterOperation#RECONFIGURE} does), under its version
 *       ({@link Decision.Mismatch#UPGRADED});
 *   <li>the stored version is newer: the stored limits decide ({@link Decision.Mismatch#ADOPTED});
 *   <li>the same version: the stored limits decide ({@link Decision.Mismatch#CONFLICT}).
 * </ul>
 *
 * The decision says which happened, and the handle reports it. Equal limits under an older
 * stored version take the caller's version silently; {@code RECONFIGURE} stores the caller's
 * limits and version whatever was stored, even on a key with no state.
 *
 * <p>Why an order, and not "the caller's limits always": during a rolling deploy, processes of the
 * old and the new configuration run side by side, and "the last caller wins" would flip every
 * key between the two on every call, resetting what each had consumed under the other's math.
 * An order makes the change one-way: the first call of the new configuration moves a key
 * forward, once, and the old processes follow the stored limits until they are replaced. Why the
 * stored limits on a tie: two processes that claim the same version but disagree have no order
 * to decide by, and the stored limits are the ones every other process is already applying, so
 * keeping them changes nothing for anyone; the mismatch is reported, for an operator to fix the
 * configuration.
 *
 * <p><b>A full state is kept when it is not the caller's.</b> A limiter's state is dropped when it
 * is full again, since a fresh state of the caller's limits is the same thing. That holds only
 * for the caller's own limits: a full state that holds other limits (adopted, a tie, or one just
 * stored by {@code RECONFIGURE}) is kept for as long as a used-up state of those limits would
 * be, so that the next caller with other limits applies them instead of starting its own.
 *
 * <p><b>Debt.</b> {@link LimiterOperation#CHARGE} settles a cost that was known only after the
 * work was done (a reservation that cost more than its estimate). Refusing it would be a lie, the
 * work has happened, so it is always granted; but it must not be free either, or an estimate of
 * one and a settlement of a million would get round every limit. So a charge takes each limit
 * below empty, into a debt that later requests wait out: a bucket refills through it, a window
 * or a quota refuses until its count is forgiven at its boundary (a sliding window's carries into
 * the next through the previous share). Each limit's debt is bounded at one full limit below
 * empty ({@link Algorithm#debtRoom}; the rest of a charge beyond it is dropped, per limit): a
 * single misestimate then costs at most one more limit's worth of waiting, the most an honest
 * caller could have been granted at once, and never locks a key out indefinitely. Every limit is
 * charged on its own, not all-or-nothing, since nothing is being decided; and a charge is never
 * part of a joint decision, which decides whether to grant. A charge lands in the window (or
 * period) current when it is decided: a past window can no longer refuse anyone, so a charge
 * there would be free.
 *
 * <p>Public as the reference: a store that runs the algorithms in its own language (a Lua
 * script, SQL) tests that it agrees with this machine, step for step.
 */
public final class LimiterMachine implements LimiterCall {
  private final String key;
  private final List<Limit> limits;
  private final ZoneId[] zones;
  private final long version;
  private final Mismatches mismatches;

  /** The machine of a limiter on {@code key} with {@code limits}, for store tests. */
  public static LimiterMachine of(String key, List<Limit> limits) {
    return new LimiterMachine(key, limits, 0, Mismatches.NONE);
  }

  /** The machine of a limiter on {@code key} with {@code limits} of {@code version}, for store tests. */
  public static LimiterMachine of(String key, List<Limit> limits, long version) {
    return new LimiterMachine(key, limits, version, Mismatches.NONE);
  }

  LimiterMachine(String key, List<Limit> limits, long version, Mismatches mismatches) {
    if (limits.isEmpty()) {
      throw new IllegalArgumentException("a limiter needs at least one limit, e.g."
          + " Limit.tokenBucket(100, Duration.ofMinutes(1))");
    }
    if (version < 0 || version > LimiterRecord.MAX_LIMITS_VERSION) {
      throw new IllegalArgumentException("a limiter's version must be from 0 to "
          + LimiterRecord.MAX_LIMITS_VERSION + " (e.g. 3, or a yyyyMMddHHmmss stamp), not " + version);
    }
    this.version = version;
    this.mismatches = mismatches;
    this.key = key;
    this.limits = List.copyOf(limits);
    this.zones = new ZoneId[limits.size()];
    for (int i = 0; i < zones.length; i++) {
      zones[i] = limits.get(i).zone();
    }
  }

  @Override
  public String key() {
    return key;
  }

  @Override
  public List<Limit> limits() {
    return limits;
  }

  @Override
  public long version() {
    return version;
  }

  /** This machine with other limits, same key and version. */
  LimiterMachine withLimits(List<Limit> next) {
    return new LimiterMachine(key, next, version, mismatches);
  }

  /** This machine with another version. */
  LimiterMachine withVersion(long next) {
    return new LimiterMachine(key, limits, next, mismatches);
  }

  /** Reports {@code d}'s mismatch, if it has one: logged once per kind of mismatch, counted each time. */
  Decision report(Decision d) {
    if (d.mismatch() != Decision.Mismatch.NONE) {
      mismatches.report(this, d);
    }
    return d;
  }

  /** Whether this machine is a single bucket (token, leaky or GCRA), the memory store's fast path. */
  boolean isSingleBucket() {
    return limits.size() == 1 && Algorithm.of(limits.get(0)) == Gcra.INSTANCE;
  }

  /** The record of a full limiter with these limits. */
  long[] fresh() {
    long[] r = new long[limits.size() * WIDTH];
    for (int i = 0; i < limits.size(); i++) {
      Algorithm.init(r, i * WIDTH, limits.get(i), version);
    }
    return r;
  }

  @Override
  public LimiterOutcome apply(LimiterRecord stored, long now, LimiterOperation op, long permits) {
    long storeNow = now;
    if (stored != null) {
      now = Math.max(now, stored.decidedAt()); // time never runs back: see LimiterRecord
    }
    if (op == LimiterOperation.RESET) {
      return new LimiterOutcome(null, full(), 0, now);
    }
    long[] words = stored == null || stored.isTombstone() ? null : stored.words();
    long[] r = isEmpty(words) ? fresh() : check(words);
    now = notBefore(r, now);
    Decision.Mismatch mismatch = Decision.Mismatch.NONE;
    long storedVersion = 0;
    boolean own = true; // whether r now holds this caller's limits
    if (words != null) {
      storedVersion = LimiterRecord.limitsVersion(r);
      if (op == LimiterOperation.RECONFIGURE) {
        r = reconfigured(r, now);
      } else if (!sameLimits(r)) {
        if (version > storedVersion) {
          r = reconfigured(r, now);
          mismatch = Decision.Mismatch.UPGRADED;
        } else {
          mismatch = version < storedVersion ? Decision.Mismatch.ADOPTED : Decision.Mismatch.CONFLICT;
          own = false;
        }
      } else if (version > storedVersion) {
        stamp(r, version);
      }
    }
    int n = r.length / WIDTH;
    for (int i = 0; i < n; i++) {
      Algorithm.ofTag(r[i * WIDTH]).normalize(r, i * WIDTH, now, zone(i));
    }
    boolean allowed = true;
    long retryAfter = 0;
    switch (op) {
      case ACQUIRE:
        if (permits > 0) {
          retryAfter = retryAfter(r, n, now, permits);
          allowed = retryAfter == 0;
          if (allowed) {
            for (int i = 0; i < n; i++) {
              Algorithm.ofTag(r[i * WIDTH]).consume(r, i * WIDTH, now, permits);
            }
          }
        }
        break;
      case PEEK:
        retryAfter = retryAfter(r, n, now, 1);
        allowed = retryAfter == 0;
        break;
      case REFUND:
        for (int i = 0; i < n; i++) {
          Algorithm.ofTag(r[i * WIDTH]).refund(r, i * WIDTH, now, permits);
        }
        break;
      case TOP_UP:
        boolean any = false;
        for (int i = 0; i < n; i++) {
          if (Algorithm.ofTag(r[i * WIDTH]) == CalendarQuota.INSTANCE) {
            CalendarQuota.INSTANCE.topUp(r, i * WIDTH, permits);
            any = true;
          }
        }
        if (!any) {
          throw new IllegalStateException("limiter '" + key + "' has no quota limit to top up");
        }
        break;
      case CHARGE:
        for (int i = 0; i < n; i++) {
          Algorithm a = Algorithm.ofTag(r[i * WIDTH]);
          long c = permits <= 0 ? 0 : Math.min(permits, a.debtRoom(r, i * WIDTH, now));
          if (c > 0) { // a warming bucket's consume moves a full fullAt up to now, even for none
            a.consume(r, i * WIDTH, now, c);
          }
        }
        break;
      case RECONFIGURE:
        break;
      default:
        throw new AssertionError(op);
    }
    long remaining = Long.MAX_VALUE;
    long limit = 0;
    int deciding = 0;
    long resetAfter = 0;
    long kept = 0;
    long[] perLimit = n > 1 ? new long[3 * n] : null; // one limit's state is the decision's own
    for (int i = 0; i < n; i++) {
      Algorithm a = Algorithm.ofTag(r[i * WIDTH]);
      long rem = a.remaining(r, i * WIDTH, now);
      long lim = a.limit(r, i * WIDTH);
      long reset = a.resetAfter(r, i * WIDTH, now);
      if (i == 0 || rem < remaining) { // a limit of Long.MAX_VALUE can have that much left
        remaining = rem;
        limit = lim;
        deciding = i;
      }
      resetAfter = Math.max(resetAfter, reset);
      kept = Math.max(kept, a.keepAfter(r, i * WIDTH, now));
      if (perLimit != null) {
        perLimit[3 * i] = rem;
        perLimit[3 * i + 1] = lim;
        perLimit[3 * i + 2] = reset;
      }
    }
    Decision decision = new Decision(allowed, remaining, limit, retryAfter, resetAfter, deciding, perLimit);
    if (mismatch != Decision.Mismatch.NONE) {
      decision = decision.withMismatch(mismatch, storedVersion);
    }
    if (kept == 0 && (!own || op == LimiterOperation.RECONFIGURE)) {
      kept = usedUpFor(r, n, now); // full, but not the caller's limits: see the class comment
    }
    // The store keeps the record from its own now, which may be behind the instant decided at.
    long keep = kept == 0 ? 0 : Arith.saturatedAdd(kept, now - storeNow);
    return new LimiterOutcome(kept == 0 ? null : r, decision, keep, now);
  }

  /**
   * Whether the record holds this machine's limits: the same number, each of the same kind with
   * the same parameters. The version is not compared, nor the state.
   */
  private boolean sameLimits(long[] r) {
    if (r.length != limits.size() * WIDTH) {
      return false;
    }
    for (int i = 0; i < limits.size(); i++) {
      Limit l = limits.get(i);
      int o = i * WIDTH;
      if ((r[o] & Algorithm.KIND_MASK) != LimiterRecord.limitTag(l) || r[o + Algorithm.P0] != l.limit()
          || r[o + Algorithm.P1] != l.intervalNanos()
          || (l.coldFactor() != 0 && r[o + Algorithm.S1] != l.warmUpNanos())) {
        return false;
      }
    }
    return true;
  }

  /** Writes {@code version} into every tag word of {@code r}. */
  private static void stamp(long[] r, long version) {
    for (int o = 0; o < r.length; o += WIDTH) {
      r[o] = LimiterRecord.tag((int) (r[o] & Algorithm.KIND_MASK), version);
    }
  }

  /**
   * How long a state of {@code r}'s limits would be kept had every limit just been used up at
   * {@code now}: how long a full state that is not the caller's is kept.
   */
  private long usedUpFor(long[] r, int n, long now) {
    long[] used = r.clone();
    long longest = 0;
    for (int i = 0; i < n; i++) {
      Algorithm a = Algorithm.ofTag(used[i * WIDTH]);
      long all = a.remaining(used, i * WIDTH, now);
      if (all > 0) {
        a.consume(used, i * WIDTH, now, all);
      }
      longest = Math.max(longest, a.keepAfter(used, i * WIDTH, now));
    }
    return longest;
  }

  /**
   * The instant to decide at: {@code now}, unless the stored state was already decided later.
   *
   * <p>Why: a window's count belongs to the window it was counted in. Just after a boundary, an
   * instant a little earlier lies in the previous window; deciding there would roll the window
   * back to an empty count, and everything this window granted would be granted again. Such an
   * instant reaches the machine whenever clocks disagree or step: a caller whose clock is behind
   * another's, an NTP step, or a thread that read the clock and was descheduled before it took
   * the state. So the state never moves back: a call is decided no earlier than the latest
   * instant the state itself proves was reached (a window's start). Its answer is then the one it
   * would have got at that instant, and the durations it reports count from there. The record's
   * {@link LimiterRecord#decidedAt()} is the general floor, for every algorithm; this one holds
   * even for a store that lost it (a record written before it was kept).
   */
  private static long notBefore(long[] r, long now) {
    for (int o = 0; o < r.length; o += WIDTH) {
      now = Math.max(now, Algorithm.ofTag(r[o]).notBefore(r, o));
    }
    return now;
  }

  /**
   * When {@code permits} fit every one of the {@code n} limits: the longest wait any one of them
   * asks for, unless a limit that has room now will have lost it by then (a quota whose top-ups
   * end with the period), in which case never.
   */
  private static long retryAfter(long[] r, int n, long now, long permits) {
    long wait = 0;
    for (int i = 0; i < n; i++) {
      wait = Math.max(wait, Algorithm.ofTag(r[i * WIDTH]).retryAfter(r, i * WIDTH, now, permits));
    }
    if (wait != 0 && wait != Decision.NEVER) {
      for (int i = 0; i < n; i++) {
        Algorithm a = Algorithm.ofTag(r[i * WIDTH]);
        if (a.retryAfter(r, i * WIDTH, now, permits) == 0 && !a.stillFits(r, i * WIDTH, now, permits, wait)) {
          return Decision.NEVER;
        }
      }
    }
    return wait;
  }

  /** The decision of a full limiter with these limits, as after a reset. */
  Decision full() {
    long remaining = Long.MAX_VALUE;
    long limit = 0;
    int deciding = 0;
    long[] perLimit = limits.size() > 1 ? new long[3 * limits.size()] : null;
    for (int i = 0; i < limits.size(); i++) {
      Limit l = limits.get(i);
      if (limit == 0 || l.limit() < remaining) {
        remaining = l.limit();
        limit = l.limit();
        deciding = i;
      }
      if (perLimit != null) {
        perLimit[3 * i] = l.limit();
        perLimit[3 * i + 1] = l.limit();
      }
    }
    return new Decision(true, remaining, limit, 0, 0, deciding, perLimit);
  }

  private ZoneId zone(int i) {
    return i < zones.length ? zones[i] : null;
  }

  private static boolean isEmpty(long[] r) {
    return r == null || r.length == 0 || r[0] == 0;
  }

  private long[] check(long[] r) {
    if (r.length % WIDTH != 0) {
      throw new IllegalStateException("stored state of limiter '" + key + "' has " + r.length
          + " words, not a multiple of " + WIDTH + "; it was not written by this version of Tally");
    }
    for (int o = 0; o < r.length; o += WIDTH) {
      Algorithm.ofTag(r[o]);
    }
    return r;
  }

  /** This machine's limits, carrying over what each same-kind stored limit had consumed. */
  private long[] reconfigured(long[] stored, long now) {
    long[] r = fresh();
    for (int i = 0; i < limits.size(); i++) {
      int o = i * WIDTH;
      if (o < stored.length) {
        Algorithm old = Algorithm.ofTag(stored[o]);
        Algorithm next = Algorithm.of(limits.get(i));
        if (old.family() == next.family()) {
          old.normalize(stored, o, now, zone(i));
          next.restore(r, o, now, old.consumed(stored, o, now), zone(i));
        }
      }
    }
    return r;
  }
}
