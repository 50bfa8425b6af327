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

  /** Each step is a round trip or more, which a loaded machine stretches: 2 s, not 0.4 s. */
  @Override
  protected long leaseTtlMillis() {
    return 2_000;
  }
}
