package dev.tally.dynamodb;

import dev.tally.tck.ConcurrencyProcessesContract;

/** A concurrency limit shared by three JVMs, each with its own SDK client, on one table. */
class DynamoDbConcurrencyProcessesTest extends ConcurrencyProcessesContract {
  @Override
  protected String uri() {
    return Dynalite.tableUri(DynamoDbStoreTest.table("concurrency procs"), "key", "async=off");
  }

  /** Each step is a round trip or more, which a loaded machine stretches: 2 s, not 0.4 s. */
  @Override
  protected long leaseTtlMillis() {
    return 2_000;
  }
}
