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
    return Tally.builder(Dynalite.tableUri(DynamoDbStoreTest.table("bounded"), "key", "timeout=5000"))
        .timeSource(clock).build();
  }

  @Override
  protected int operationsPerThread() {
    return 100;
  }
}
