package dev.tally;

import dev.tally.Timelines.Extra;
import dev.tally.Timelines.Timeline;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Every limit kind makes exactly the decisions of its reference model ({@link ReferenceModels}):
 * same allowed, remaining, limit, retry-after and reset-after on every call of long random
 * timelines of acquires (0 permits to far beyond the limit), peeks, refunds, top-ups and resets.
 */
class LimiterModelProperties {

  @Property(tries = 1500)
  void tokenBucketIsTheExactRationalBucket(@ForAll("tokenBuckets") Timeline t) {
    LimiterChecks.agreesWithModel(t);
  }

  @Property(tries = 1500)
  void leakyBucketIsTheSameBucket(@ForAll("leakyBuckets") Timeline t) {
    LimiterChecks.agreesWithModel(t);
  }

  @Property(tries = 1500)
  void gcraIsTheSameBucketWithBurstPlusOne(@ForAll("gcras") Timeline t) {
    LimiterChecks.agreesWithModel(t);
  }

  @Property(tries = 1500)
  void fixedWindowCountsPerAlignedWindow(@ForAll("fixedWindows") Timeline t) {
    LimiterChecks.agreesWithModel(t);
  }

  @Property(tries = 1500)
  void slidingWindowWeighsThePreviousWindow(@ForAll("slidingWindows") Timeline t) {
    LimiterChecks.agreesWithModel(t);
  }

  @Property(tries = 1500)
  void quotaCountsPerCalendarPeriod(@ForAll("quotas") Timeline t) {
    LimiterChecks.agreesWithModel(t);
  }

  @Provide
  Arbitrary<Timeline> tokenBuckets() {
    return Timelines.timelines(Timelines.tokenBuckets(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> leakyBuckets() {
    return Timelines.timelines(Timelines.leakyBuckets(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> gcras() {
    return Timelines.timelines(Timelines.gcras(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> fixedWindows() {
    return Timelines.timelines(Timelines.fixedWindows(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> slidingWindows() {
    return Timelines.timelines(Timelines.slidingWindows(false), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> quotas() {
    return Timelines.timelines(Timelines.quotas(false), Extra.RESET);
  }
}
