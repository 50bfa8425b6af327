package dev.tally.dynamodb;

import dev.tally.Tally;
import dev.tally.tck.CounterConcurrencyContract;
import dev.tally.tck.CounterContract;
import dev.tally.tck.InputValidationContract;
import dev.tally.tck.LimiterContract;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.SeedExamplesContract;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The whole conformance kit against a DynamoDB server (dynalite, see {@link Dynalite}). The
 * store runs on the kit's manual clock, as every store without a clock of its own does.
 */
@ExtendWith(NeedsTransactions.class)
class DynamoDbStoreTest {

  static Tally openDynamo(ManualTimeSource clock) {
    return Tally.builder(Dynalite.uri()).timeSource(clock).build();
  }

  @Nested
  class Counters extends CounterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openDynamo(clock);
    }
  }

  @Nested
  class SeedExamples extends SeedExamplesContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openDynamo(clock);
    }
  }

  @Nested
  class Concurrency extends CounterConcurrencyContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openDynamo(clock);
    }

    @Override
    protected int operationsPerThread() {
      return 200; // each operation is a request to a local server
    }
  }

  @Nested
  class Limiters extends LimiterContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openDynamo(clock);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openDynamo(clock);
    }
  }
}
