package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import static dev.tally.internal.Timelines.NEVER;
import static dev.tally.internal.Timelines.TIME_MAX;

import dev.tally.internal.ReferenceModels.Expected;
import dev.tally.internal.ReferenceModels.Model;
import dev.tally.internal.Timelines.Driver;
import dev.tally.internal.Timelines.Step;
import dev.tally.internal.Timelines.Timeline;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import java.util.List;

/** Checks the property tests run on every call of a timeline. */
final class LimiterChecks {
  private LimiterChecks() {}

  /** Plays a single-limit timeline on the machine and on the limit's model; they must agree. */
  static void agreesWithModel(Timeline t) {
    if (t.limits().size() != 1) {
      throw new IllegalArgumentException("one limit");
    }
    Model model = ReferenceModels.of(t.limits().get(0));
    Driver d = new Driver(t.limits(), t.start());
    boolean waited = false;
    boolean never = false;
    boolean emptied = false;
    for (int i = 0; i < t.steps().size(); i++) {
      Step s = t.steps().get(i);
      long now = d.advance(s);
      Expected e = model.apply(now, s.op(), s.permits());
      LimiterOutcome out = d.call(s.op(), s.permits());
      Decision got = out.decision();
      waited |= !got.allowed() && got.retryAfterNanos() != NEVER;
      never |= got.retryAfterNanos() == NEVER;
      emptied |= got.remaining() == 0;
      Expected actual = new Expected(got.allowed(), got.remaining(), got.limit(), got.retryAfterNanos(),
          got.resetAfterNanos());
      if (!actual.equals(e)) {
        throw new AssertionError("step " + i + " (" + s + ") at " + now + ": model says " + e
            + ", machine says " + actual);
      }
    }
    // Reported with each property: agreement proves little unless most timelines get here.
    Property.collect("denied with a finite wait", waited);
    Property.collect("denied for ever", never);
    Property.collect("ran out", emptied);
  }

  /** Plays a timeline and checks every decision's own consistency; see {@link #sane}. */
  static void decisionsAreSane(Timeline t) {
    Driver d = new Driver(t.limits(), t.start());
    for (int i = 0; i < t.steps().size(); i++) {
      Step s = t.steps().get(i);
      d.advance(s);
      LimiterOutcome out = d.call(s.op(), s.permits());
      try {
        sane(d, t.limits(), s.op(), s.permits(), out);
      } catch (AssertionError e) {
        throw new AssertionError("step " + i + " (" + s + ") at " + d.now + ": " + e.getMessage(), e);
      }
    }
  }

  /**
   * A decision just made by {@code d} (whose record and clock are those after the call) is
   * consistent: remaining within the limit; retry-after zero exactly when allowed; never exactly
   * when the request exceeds a limit; a finite retry-after is exact (the same request succeeds at
   * {@code now + retryAfter} and not a nanosecond before); reset-after is exact (at
   * {@code now + resetAfter} the state is dropped, a nanosecond before it is not) and is the time
   * the store must keep the record.
   */
  static void sane(Driver d, List<Limit> limits, LimiterOperation op, long permits, LimiterOutcome out) {
    Decision dec = out.decision();
    long now = d.now;
    check(dec.limit() > 0, "limit " + dec.limit());
    check(dec.remaining() >= 0 && dec.remaining() <= dec.limit(), "remaining " + dec);
    check(dec.retryAfterNanos() >= 0 && dec.resetAfterNanos() >= 0, "negative time " + dec);
    check(dec.allowed() == (dec.retryAfterNanos() == 0), "allowed iff no wait " + dec);
    check(out.keepNanos() == dec.resetAfterNanos(), "keep " + out.keepNanos() + " for " + dec);
    check((out.record() == null) == (dec.resetAfterNanos() == 0), "record kept iff not reset " + dec);
    boolean asks = op == LimiterOperation.PEEK || op == LimiterOperation.ACQUIRE && permits > 0;
    if (!asks) {
      check(dec.allowed(), op + " " + permits + " is always allowed: " + dec);
    } else {
      long n = op == LimiterOperation.PEEK ? 1 : permits;
      boolean beyondSome = false; // more than a limit can ever grant: never
      boolean beyondAny = false; // more than a limit grants in general: possibly never
      for (Limit l : limits) {
        beyondSome |= n > l.limit() && l.kind() != Limit.Kind.QUOTA;
        beyondAny |= n > l.limit();
      }
      if (beyondSome) {
        check(!dec.allowed() && dec.retryAfterNanos() == NEVER, n + " over a limit must be never: " + dec);
      }
      if (!dec.allowed() && dec.retryAfterNanos() == NEVER) {
        check(beyondAny, n + " within every limit cannot be never: " + dec);
      }
      long r = dec.retryAfterNanos();
      if (!dec.allowed() && r != NEVER && r <= TIME_MAX - now) {
        Decision at = d.probe(now + r, op, permits).decision();
        check(at.allowed(), "denied at now + retryAfter " + r + ": " + at + " (was " + dec + ")");
        Decision before = d.probe(now + r - 1, op, permits).decision();
        check(!before.allowed(), "allowed before now + retryAfter " + r + ": " + before + " (was " + dec + ")");
      }
    }
    long reset = dec.resetAfterNanos();
    if (reset <= TIME_MAX - now) {
      LimiterOutcome at = d.probe(now + reset, LimiterOperation.PEEK, 1);
      check(at.record() == null, "state still kept at now + resetAfter " + reset + ": " + at.decision());
      if (reset > 0) {
        LimiterOutcome before = d.probe(now + reset - 1, LimiterOperation.PEEK, 1);
        check(before.record() != null, "state dropped before now + resetAfter " + reset);
      }
    }
  }

  static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError(what);
    }
  }
}
