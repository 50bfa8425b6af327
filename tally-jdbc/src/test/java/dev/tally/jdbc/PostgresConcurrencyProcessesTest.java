package dev.tally.jdbc;

import dev.tally.tck.ConcurrencyProcessesContract;

/**
 * A concurrency limit shared by three JVMs, each with its own pool, on the shared PostgreSQL
 * server: leases expiring on the server's clock. A table of its own.
 */
class PostgresConcurrencyProcessesTest extends ConcurrencyProcessesContract {
  private static final String TABLE = "concurrency_procs";

  @Override
  protected String uri() {
    PostgresServer server = PostgresServer.shared();
    server.execute(PostgresSchema.storeDdl(TABLE));
    return server.uri("table=" + TABLE + "&pool=4");
  }

  /**
   * Each step is a transaction of several round trips, which a loaded machine stretches; and the
   * freeze (the ttl and 0.6 s) must outlast the 2.5 s after which the server ends the session of a
   * holder frozen mid-step, whose row lock blocks the others until then: 4 s, not 0.4 s.
   */
  @Override
  protected long leaseTtlMillis() {
    return 4_000;
  }

  /** The server ends the frozen holder's session idle mid-transaction, so its in-flight calls fail. */
  @Override
  protected boolean frozenCallsMayFail() {
    return true;
  }
}
