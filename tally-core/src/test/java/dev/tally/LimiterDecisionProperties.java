package dev.tally;

import dev.tally.Timelines.Extra;
import dev.tally.Timelines.Timeline;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Every decision of every kind of limiter, alone or composed with another, is consistent with
 * itself and with what happens next (see {@link LimiterChecks#sane}): remaining within the limit,
 * retry-after zero exactly when allowed, never exactly when the request exceeds a limit, and both
 * retry-after and reset-after exact to the nanosecond.
 */
class LimiterDecisionProperties {

  @Property(tries = 1500)
  void singleLimitDecisionsAreExact(@ForAll("singles") Timeline t) {
    LimiterChecks.decisionsAreSane(t);
  }

  @Property(tries = 1000)
  void composedDecisionsAreExact(@ForAll("pairs") Timeline t) {
    LimiterChecks.decisionsAreSane(t);
  }

  @Property(tries = 1000)
  void quotasWithTopUpsComposedAreExact(@ForAll("quotaPairs") Timeline t) {
    LimiterChecks.decisionsAreSane(t);
  }

  @Provide
  Arbitrary<Timeline> quotaPairs() {
    return Timelines.pairs(Timelines.quotas(false), Timelines.anyLimit(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> singles() {
    return Timelines.timelines(Timelines.anyLimit(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> pairs() {
    return Timelines.pairs(Timelines.anyLimit(false), Timelines.anyLimit(false), Extra.RESET);
  }
}
