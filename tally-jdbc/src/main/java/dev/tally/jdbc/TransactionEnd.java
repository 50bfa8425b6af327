package dev.tally.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * The end of a database transaction run on a pooled connection: rolled back unless committed,
 * and the connection put back in auto-commit for its next user.
 *
 * <p>After a failure both steps are quiet. The failure that ended the transaction is the one
 * the caller must hear: when the server stopped answering, pgjdbc closed the connection with a
 * socket timeout ({@link Failures}: "may or may not have been applied"), and a rollback or
 * {@code setAutoCommit} on that closed connection would throw "Connection is closed" from a
 * {@code finally}, replacing the timeout with a failure that says nothing of what happened. A
 * broken connection is discarded by the pool, and PostgreSQL rolls back on its own.
 */
final class TransactionEnd {
  private TransactionEnd() {}

  /** Ends the transaction on {@code c}, from a {@code finally}; {@code committed} if it committed. */
  static void end(Connection c, boolean committed) throws SQLException {
    if (committed) {
      c.setAutoCommit(true);
      return;
    }
    try {
      c.rollback();
      c.setAutoCommit(true);
    } catch (SQLException broken) {
      // the failure under way is the one reported (see the class comment)
    }
  }
}
