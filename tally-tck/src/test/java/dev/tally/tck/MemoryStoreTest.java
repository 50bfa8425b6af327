package dev.tally.tck;

import dev.tally.Tally;
import org.junit.jupiter.api.Nested;

/** The whole kit against {@code mem:}. */
class MemoryStoreTest {

  static Tally openMemory(ManualTimeSource clock) {
    return Tally.builder("mem:").timeSource(clock).build();
  }

  @Nested
  class Counters extends CounterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openMemory(clock);
    }
  }

  @Nested
  class SeedExamples extends SeedExamplesContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openMemory(clock);
    }
  }

  @Nested
  class Concurrency extends CounterConcurrencyContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openMemory(clock);
    }
  }

  @Nested
  class Limiters extends LimiterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openMemory(clock);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openMemory(clock);
    }
  }
}
