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

  /**
   * The transaction tests once more, on dynalite with the transaction operations emulated by
   * {@link EmulatedTransactions}, so the store's transaction requests meet a real expression
   * parser even where the server has no transactions.
   */
  static Tally openEmulated(ManualTimeSource clock) {
    // async=off: the emulation wraps the blocking client, so the async API must use it too
    String uri = Dynalite.uri("async=off").replaceFirst("^dynamodb:", "dynamodb-txemu:");
    return Tally.builder(uri).timeSource(clock).build();
  }

  @Nested
  class CountersWithEmulatedTransactions extends CounterContract implements NeedsTransactions.Emulated {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openEmulated(clock);
    }
  }

  @Nested
  class ConcurrencyWithEmulatedTransactions extends CounterConcurrencyContract implements NeedsTransactions.Emulated {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openEmulated(clock);
    }

    @Override
    protected int operationsPerThread() {
      return 60; // the plain suite runs the rest at full size
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
