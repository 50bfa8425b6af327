package dev.tally.internal;

import dev.tally.internal.Timelines.Extra;
import dev.tally.internal.Timelines.Timeline;
import org.junit.jupiter.api.Test;

/**
 * Every decision of every kind of limiter, alone or composed with another, is consistent with
 * itself and with what happens next (see {@link LimiterChecks#sane}): remaining within the limit,
 * retry-after zero exactly when allowed, never exactly when the request exceeds a limit, and both
 * retry-after and reset-after exact to the nanosecond.
 */
class LimiterDecisionProperties {

  @Test
  void singleLimitDecisionsAreExact() {
    Property.forAll(6000, singles(), t -> {
      LimiterChecks.decisionsAreSane(t);
    });
  }

  @Test
  void composedDecisionsAreExact() {
    Property.forAll(4000, pairs(), t -> {
      LimiterChecks.decisionsAreSane(t);
    });
  }

  @Test
  void quotasWithTopUpsComposedAreExact() {
    Property.forAll(4000, quotaPairs(), t -> {
      LimiterChecks.decisionsAreSane(t);
    });
  }

  private static Gen<Timeline> quotaPairs() {
    return Timelines.pairs(Timelines.quotas(false), Timelines.anyLimit(false), Extra.RESET);
  }

  private static Gen<Timeline> singles() {
    return Timelines.timelines(Timelines.anyLimit(false), Extra.RESET);
  }

  private static Gen<Timeline> pairs() {
    return Timelines.pairs(Timelines.anyLimit(false), Timelines.anyLimit(false), Extra.RESET);
  }
}
