package dev.tally.jdbc;

import dev.tally.tck.JointDecisionProcessesContract;

/**
 * Joint decisions from three JVMs, each with its own pool, on the shared PostgreSQL server: one
 * call of {@code <table>_limit_all} a decision, concurrent transactions locking the same rows.
 * A table of its own, so no other test's limiters or operation ids meet these.
 */
class PostgresJointProcessesTest extends JointDecisionProcessesContract {
  private static final String TABLE = "joint_procs";

  @Override
  protected String uri() {
    PostgresServer server = PostgresServer.shared();
    server.execute(PostgresSchema.storeDdl(TABLE));
    return server.uri("table=" + TABLE + "&pool=4");
  }
}
