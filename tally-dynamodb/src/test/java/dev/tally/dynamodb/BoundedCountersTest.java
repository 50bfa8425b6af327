package dev.tally.dynamodb;

import dev.tally.Tally;
import dev.tally.tck.BoundedCounterContract;
import dev.tally.tck.ManualTimeSource;

/**
 * The kit's bounded counters on dynalite, alone: they also run in {@link DynamoDbStoreTest}'s
 * configurations, but this is the quick way to run just them.
 */
class BoundedCountersTest extends BoundedCounterContract {
  @Override
  protected Tally open(ManualTimeSource clock) {
    // Emulated transactions (see EmulatedTransactions): dynalite has none, and the kit's bounded
    // increments inside transactions need them; a bounded increment alone uses none.
    String uri = Dynalite.tableUri(DynamoDbStoreTest.table("bounded"), "key", "async=off", "timeout=5000")
        .replaceFirst("^dynamodb:", "dynamodb-txemu:");
    return Tally.builder(uri).timeSource(clock).build();
  }

  @Override
  protected int operationsPerThread() {
    return 100;
  }
}
