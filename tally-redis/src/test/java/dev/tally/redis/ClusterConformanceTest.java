package dev.tally.redis;

import dev.tally.Tally;
import dev.tally.tck.CounterConcurrencyContract;
import dev.tally.tck.CounterContract;
import dev.tally.tck.InputValidationContract;
import dev.tally.tck.LimiterContract;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.SeedExamplesContract;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;

/**
 * The whole counter kit against a three-primary Redis Cluster. Each test's group is a hash tag,
 * {@code {tck-1234abcd}:}, so that its keys share a slot and its transactions can run; the
 * kit's other groups (and the root group) spread over all three primaries, which {@code keys}
 * must therefore scan. A limiter is one key, so it needs no hash tag: the kit's limiters land on
 * all three primaries.
 */
class ClusterConformanceTest {

  static Tally open(ManualTimeSource clock) {
    return Tally.builder(SharedServers.cluster().uri()).timeSource(clock).build();
  }

  @Nested
  class Counters extends CounterContract {
    @BeforeEach
    void hashTaggedGroup() {
      counters = tally.counters("{" + uniqueGroup() + "}");
    }

    @Override
    protected Tally open(ManualTimeSource clock) {
      return ClusterConformanceTest.open(clock);
    }

    @Override
    protected void advance(Duration d) {
      StandaloneConformanceTest.sleep(d);
    }
  }

  @Nested
  class SeedExamples extends SeedExamplesContract {
    @BeforeEach
    void hashTaggedGroup() {
      counters = tally.counters("{" + uniqueGroup() + "}");
    }

    @Override
    protected Tally open(ManualTimeSource clock) {
      return ClusterConformanceTest.open(clock);
    }

    @Override
    protected void advance(Duration d) {
      StandaloneConformanceTest.sleep(d);
    }
  }

  @Nested
  class Concurrency extends CounterConcurrencyContract {
    @BeforeEach
    void hashTaggedGroup() {
      counters = tally.counters("{" + uniqueGroup() + "}");
    }

    @Override
    protected Tally open(ManualTimeSource clock) {
      return ClusterConformanceTest.open(clock);
    }

    @Override
    protected void advance(Duration d) {
      StandaloneConformanceTest.sleep(d);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return ClusterConformanceTest.open(clock);
    }
  }

  @Nested
  class Limiters extends LimiterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return ClusterConformanceTest.open(clock);
    }
  }
}
