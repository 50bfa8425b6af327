package dev.tally.internal;

import dev.tally.internal.Timelines.Extra;
import dev.tally.internal.Timelines.Timeline;
import org.junit.jupiter.api.Test;

/**
 * Every limit kind makes exactly the decisions of its reference model ({@link ReferenceModels}):
 * same allowed, remaining, limit, retry-after and reset-after on every call of long random
 * timelines of acquires (0 permits to far beyond the limit), peeks, refunds, top-ups and resets.
 */
class LimiterModelProperties {

  @Test
  void tokenBucketIsTheExactRationalBucket() {
    Property.forAll(6000, tokenBuckets(), t -> {
      LimiterChecks.agreesWithModel(t);
    });
  }

  @Test
  void leakyBucketIsTheSameBucket() {
    Property.forAll(6000, leakyBuckets(), t -> {
      LimiterChecks.agreesWithModel(t);
    });
  }

  @Test
  void gcraIsTheSameBucketWithBurstPlusOne() {
    Property.forAll(6000, gcras(), t -> {
      LimiterChecks.agreesWithModel(t);
    });
  }

  @Test
  void fixedWindowCountsPerAlignedWindow() {
    Property.forAll(6000, fixedWindows(), t -> {
      LimiterChecks.agreesWithModel(t);
    });
  }

  @Test
  void slidingWindowWeighsThePreviousWindow() {
    Property.forAll(6000, slidingWindows(), t -> {
      LimiterChecks.agreesWithModel(t);
    });
  }

  @Test
  void quotaCountsPerCalendarPeriod() {
    Property.forAll(6000, quotas(), t -> {
      LimiterChecks.agreesWithModel(t);
    });
  }

  private static Gen<Timeline> tokenBuckets() {
    return Timelines.timelines(Timelines.tokenBuckets(false), Extra.RESET);
  }

  private static Gen<Timeline> leakyBuckets() {
    return Timelines.timelines(Timelines.leakyBuckets(false), Extra.RESET);
  }

  private static Gen<Timeline> gcras() {
    return Timelines.timelines(Timelines.gcras(false), Extra.RESET);
  }

  private static Gen<Timeline> fixedWindows() {
    return Timelines.timelines(Timelines.fixedWindows(false), Extra.RESET);
  }

  private static Gen<Timeline> slidingWindows() {
    return Timelines.timelines(Timelines.slidingWindows(false), Extra.RESET);
  }

  private static Gen<Timeline> quotas() {
    return Timelines.timelines(Timelines.quotas(false), Extra.RESET);
  }
}
