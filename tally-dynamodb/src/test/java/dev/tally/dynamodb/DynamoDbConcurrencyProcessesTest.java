package dev.tally.dynamodb;

import dev.tally.tck.ConcurrencyProcessesContract;

/** A concurrency limit shared by three JVMs, each with its own SDK client, on one table. */
class DynamoDbConcurrencyProcessesTest extends ConcurrencyProcessesContract {
  /**
   * A call may take 30 s, not the default 5: dynalite answers 50 threads on one Node.js thread,
   * and on a loaded two-core machine it once left a call unanswered for 5 s. The case counts on a
   * healthy store (a failed acquire's outcome is unknown, which its books cannot allow); no server
   * is frozen here, only a child process, so a longer timeout lengthens nothing.
   */
  @Override
  protected String uri() {
    return Dynalite.tableUri(DynamoDbStoreTest.table("concurrency procs"), "key", "async=off", "timeout=30000");
  }

  /** Each step is a round trip or more, which a loaded machine stretches: 2 s, not 0.4 s. */
  @Override
  protected long leaseTtlMillis() {
    return 2_000;
  }
}
