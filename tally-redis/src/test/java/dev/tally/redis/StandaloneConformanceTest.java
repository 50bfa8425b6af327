package dev.tally.redis;

import dev.tally.Tally;
import dev.tally.tck.CounterConcurrencyContract;
import dev.tally.tck.CounterContract;
import dev.tally.tck.InputValidationContract;
import dev.tally.tck.LimiterContract;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.SeedExamplesContract;
import java.time.Duration;
import org.junit.jupiter.api.Nested;

/**
 * The whole kit against one real Redis server. Counter expiry is Redis' own, on its clock, so
 * letting time pass means sleeping ({@link #sleep}); rate limiters decide at the kit's manual
 * clock, which the store passes to its script because the clock was supplied.
 */
class StandaloneConformanceTest {

  static Tally open(ManualTimeSource clock) {
    return Tally.builder(SharedServers.standalone().uri()).timeSource(clock).build();
  }

  /** Redis expires keys on its own clock: the kit's ttls are 300 ms, so this sleeps for real. */
  static void sleep(Duration d) {
    RedisServer.sleep(d.toMillis());
  }

  @Nested
  class Counters extends CounterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return StandaloneConformanceTest.open(clock);
    }

    @Override
    protected void advance(Duration d) {
      sleep(d);
    }
  }

  @Nested
  class SeedExamples extends SeedExamplesContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return StandaloneConformanceTest.open(clock);
    }

    @Override
    protected void advance(Duration d) {
      sleep(d);
    }
  }

  @Nested
  class Concurrency extends CounterConcurrencyContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return StandaloneConformanceTest.open(clock);
    }

    @Override
    protected void advance(Duration d) {
      sleep(d);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return StandaloneConformanceTest.open(clock);
    }
  }

  @Nested
  class Limiters extends LimiterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return StandaloneConformanceTest.open(clock);
    }
  }
}
