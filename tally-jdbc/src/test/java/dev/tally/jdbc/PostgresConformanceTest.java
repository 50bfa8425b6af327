package dev.tally.jdbc;

import dev.tally.Tally;
import dev.tally.tck.CounterConcurrencyContract;
import dev.tally.tck.CounterContract;
import dev.tally.tck.InputValidationContract;
import dev.tally.tck.LimiterContract;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.SeedExamplesContract;
import org.junit.jupiter.api.Nested;

/**
 * The whole kit against one real PostgreSQL server that the tests start. The kit's clock is
 * supplied, so every statement decides at it (the time rule of {@code StoreContext}) and time
 * passes without sleeping.
 */
class PostgresConformanceTest {

  static Tally open(ManualTimeSource clock) {
    return Tally.builder(PostgresServer.shared().uri("pool=16")).timeSource(clock).build();
  }

  @Nested
  class Counters extends CounterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return PostgresConformanceTest.open(clock);
    }
  }

  @Nested
  class SeedExamples extends SeedExamplesContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return PostgresConformanceTest.open(clock);
    }
  }

  @Nested
  class Concurrency extends CounterConcurrencyContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return PostgresConformanceTest.open(clock);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return PostgresConformanceTest.open(clock);
    }
  }

  @Nested
  class Limiters extends LimiterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return PostgresConformanceTest.open(clock);
    }
  }
}
