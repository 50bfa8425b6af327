package dev.tally.dynamodb;

import dev.tally.tck.JointDecisionProcessesContract;

/**
 * Joint decisions from three JVMs, each with its own SDK client, on one table: each decision one
 * TransactWriteItems conditioned on the items it read. dynalite has no transactions, so against
 * it the children emulate them ({@link EmulatedTransactions}, whose lock spans processes); a
 * server that has them (TALLY_DYNAMODB_ENDPOINT) gets the plain store. A table of its own.
 *
 * <p>The timeout is 30 s rather than the kit's 5 s: the emulation runs every transaction of the
 * three processes one at a time, each about ten requests to dynalite, so twelve threads queue
 * for seconds on a shared machine (with 5 s, a run saw two calls of 183 time out). A timeout
 * there is the emulation's queue, not the store's; with the longer one, none is expected.
 */
class DynamoDbJointProcessesTest extends JointDecisionProcessesContract {
  private static final long EMULATION_TIMEOUT_MILLIS = 30_000;

  @Override
  protected String uri() {
    String uri = Dynalite.tableUri(DynamoDbStoreTest.table("joint procs"), "key", "async=off",
        "timeout=" + EMULATION_TIMEOUT_MILLIS);
    return Dynalite.supportsTransactions() ? uri : uri.replaceFirst("^dynamodb:", "dynamodb-txemu:");
  }
}
