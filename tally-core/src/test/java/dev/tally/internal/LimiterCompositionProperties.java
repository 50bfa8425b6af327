package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Quota;
import static dev.tally.internal.Algorithm.WIDTH;
import static dev.tally.internal.LimiterChecks.check;

import dev.tally.internal.Timelines.Driver;
import dev.tally.internal.Timelines.Extra;
import dev.tally.internal.Timelines.Step;
import dev.tally.internal.Timelines.Timeline;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Two limits composed are all-or-nothing: a request is granted iff each limit alone would grant
 * it, and a denied request leaves both limits as they were.
 *
 * <p>Next to the two-limit machine run two single-limit machines that are fed only what the
 * composed one accepted. At every call the composed decision must be what the two singles say
 * (allowed iff both allow; the smaller remaining; the longer retry-after, or never; the longer
 * reset-after), each limit's slice of the composed record must behave exactly like its single's
 * record, and a denied acquire must change nothing but what the passing of time changes.
 */
class LimiterCompositionProperties {

  @Test
  void composedLimitsAreAllOrNothing() {
    Property.forAll(4000, pairs(), t -> {
      play(t);
    });
  }

  @Test
  void quotasWithTopUpsComposeAllOrNothing() {
    Property.forAll(4000, quotaPairs(), t -> {
      play(t);
    });
  }

  private static void play(Timeline t) {
    List<Limit> limits = t.limits();
    Driver both = new Driver(limits, t.start());
    Driver[] single = {new Driver(List.of(limits.get(0)), t.start()), new Driver(List.of(limits.get(1)), t.start())};
    int denied = 0;
    for (int i = 0; i < t.steps().size(); i++) {
      Step s = t.steps().get(i);
      long now = both.advance(s);
      try {
        denied += step(both, single, limits, s, now) ? 0 : 1;
      } catch (AssertionError e) {
        throw new AssertionError("step " + i + " (" + s + ") at " + now + ": " + e.getMessage(), e);
      }
    }
    Property.collect("denied calls", denied == 0 ? "none" : denied < 10 ? "1-9" : "10+");
  }

  /** Runs one step on the composed machine and checks it; returns whether it was allowed. */
  private static boolean step(Driver both, Driver[] single, List<Limit> limits, Step s, long now) {
    LimiterOperation op = s.op();
    long n = s.permits();
    for (Driver d : single) {
      d.now = now;
    }
    // What each limit alone would answer, asked on copies.
    Decision[] alone = new Decision[2];
    for (int k = 0; k < 2; k++) {
      alone[k] = single[k].probe(now, applies(op, limits.get(k)) ? op : LimiterOperation.PEEK, n).decision();
    }
    long[] before = Timelines.copy(both.record);
    LimiterOutcome out = both.call(op, n);
    Decision dec = out.decision();

    boolean asks = op == LimiterOperation.ACQUIRE && n > 0 || op == LimiterOperation.PEEK;
    if (asks) {
      check(dec.allowed() == (alone[0].allowed() && alone[1].allowed()),
          "allowed " + dec + " but alone " + Arrays.toString(alone));
      long wait = Math.max(alone[0].retryAfterNanos(), alone[1].retryAfterNanos());
      long asked = op == LimiterOperation.PEEK ? 1 : n;
      long expected = wait != 0 && wait != Decision.NEVER && dropsOut(limits, asked, alone, wait, now)
          ? Decision.NEVER : wait;
      check(dec.retryAfterNanos() == expected,
          "retry after " + dec + " but alone " + Arrays.toString(alone) + ", so " + expected);
    } else {
      check(dec.allowed(), op + " is always allowed: " + dec);
    }

    if (op == LimiterOperation.ACQUIRE && n > 0 && !dec.allowed()) {
      // Denied: the record is what merely looking at it now would leave.
      LimiterOutcome looked = both.machine.apply(Timelines.words(Timelines.copy(before)), now, LimiterOperation.PEEK, 1);
      check(Arrays.equals(out.record(), looked.record()), "a denied request changed the state: "
          + Arrays.toString(before) + " -> " + Arrays.toString(out.record()) + ", looking gives "
          + Arrays.toString(looked.record()));
    } else if (op == LimiterOperation.RESET) {
      for (Driver d : single) {
        d.call(op, n);
      }
    } else {
      for (int k = 0; k < 2; k++) {
        if (applies(op, limits.get(k))) {
          single[k].call(op, n);
        }
      }
    }

    // Each limit's slice of the composed record is its single's record, once both are brought up
    // to now (null, for a single, is a full limit).
    long remaining = Long.MAX_VALUE;
    long reset = 0;
    for (int k = 0; k < 2; k++) {
      long[] slice = out.record() == null ? null : Arrays.copyOfRange(out.record(), k * WIDTH, (k + 1) * WIDTH);
      LimiterOutcome fromSlice = single[k].machine.apply(Timelines.words(slice), now, LimiterOperation.PEEK, 1);
      LimiterOutcome fromSingle = single[k].probe(now, LimiterOperation.PEEK, 1);
      check(Arrays.equals(fromSlice.record(), fromSingle.record()) && fromSlice.decision().equals(fromSingle.decision()),
          "limit " + k + " (" + limits.get(k) + ") composed " + Arrays.toString(fromSlice.record()) + " "
              + fromSlice.decision() + ", alone " + Arrays.toString(fromSingle.record()) + " " + fromSingle.decision());
      remaining = Math.min(remaining, fromSingle.decision().remaining());
      reset = Math.max(reset, fromSingle.decision().resetAfterNanos());
    }
    check(dec.remaining() == remaining, "remaining " + dec + ", limits alone " + remaining);
    check(dec.resetAfterNanos() == reset, "reset after " + dec + ", limits alone " + reset);
    return dec.allowed();
  }

  /** Top-ups go to quotas only; everything else to every limit. */
  private static boolean applies(LimiterOperation op, Limit l) {
    return op != LimiterOperation.TOP_UP || l.kind() == Limit.Kind.QUOTA;
  }

  /**
   * Whether the request can never pass although each limit alone names a finite wait: one limit
   * is a quota with room now only thanks to this period's top-ups (more than its allowance), and
   * the other's wait reaches the quota's next period, where the top-ups are gone.
   */
  private static boolean dropsOut(List<Limit> limits, long n, Decision[] alone, long wait, long now) {
    for (int k = 0; k < 2; k++) {
      Limit l = limits.get(k);
      if (alone[k].allowed() && l.kind() == Limit.Kind.QUOTA && n > l.limit()
          && now + wait >= ReferenceModels.Quota.nextStart(now, l.period(), l.zone())) {
        return true;
      }
    }
    return false;
  }

  private static Gen<Timeline> pairs() {
    return Timelines.pairs(Timelines.anyLimit(false), Timelines.anyLimit(false), Extra.RESET);
  }

  private static Gen<Timeline> quotaPairs() {
    return Timelines.pairs(Timelines.quotas(false), Timelines.anyLimit(false), Extra.RESET);
  }
}
