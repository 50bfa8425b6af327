package dev.tally.local;

import dev.tally.Tally;
import dev.tally.tck.CounterConcurrencyContract;
import dev.tally.tck.CounterContract;
import dev.tally.tck.InputValidationContract;
import dev.tally.tck.LimiterContract;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.SeedExamplesContract;
import java.nio.file.Path;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.io.TempDir;

/** The whole conformance kit against {@code file:}, each test on a store in a fresh directory. */
class LocalStoreTckTest {
  @TempDir
  Path dir;

  Tally openFresh(ManualTimeSource clock) {
    return Tally.builder("file:" + dir.resolve("tally-data")).timeSource(clock).build();
  }

  @Nested
  class Counters extends CounterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openFresh(clock);
    }
  }

  @Nested
  class SeedExamples extends SeedExamplesContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openFresh(clock);
    }
  }

  @Nested
  class Concurrency extends CounterConcurrencyContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openFresh(clock);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openFresh(clock);
    }
  }

  @Nested
  class Limiters extends LimiterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openFresh(clock);
    }
  }
}
