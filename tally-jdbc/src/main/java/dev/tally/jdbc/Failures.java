package dev.tally.jdbc;

import dev.tally.CounterOverflowException;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.WrongKindException;
import java.net.SocketTimeoutException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

/**
 * Turns what pgjdbc, HikariCP and PostgreSQL report into the exceptions Tally promises, in one
 * place (docs/postgresql.md has the same table for users).
 *
 * <table>
 *   <caption>What a caller sees</caption>
 *   <tr><th>PostgreSQL / JDBC</th><th>Tally</th></tr>
 *   <tr><td>no pooled connection within the timeout (server down or pool exhausted)</td>
 *       <td>{@link StoreUnavailableException}: nothing was sent</td></tr>
 *   <tr><td>no answer within the call's time (the socket timed out; pgjdbc closes the
 *       connection and reports SQLSTATE 08006, so the pool discards it)</td>
 *       <td>{@link StoreTimeoutException}: the statement may or may not have committed</td></tr>
 *   <tr><td>SQLSTATE class 08 (connection lost), 57P01-57P03 (shutdown, cannot connect now)</td>
 *       <td>{@link StoreUnavailableException}: the statement may or may not have committed</td></tr>
 *   <tr><td>57014 (statement_timeout)</td><td>{@link StoreTimeoutException}: rolled back</td></tr>
 *   <tr><td>22003 (bigint or float8 out of range)</td><td>{@link CounterOverflowException}</td></tr>
 *   <tr><td>TALLY_NOT_LIMITER from the limiter function</td><td>{@link WrongKindException}</td></tr>
 *   <tr><td>42P01 / 42883 (table or function missing)</td><td>{@link StoreException} naming
 *       {@code tally schema}</td></tr>
 *   <tr><td>anything else</td><td>{@link StoreException} with PostgreSQL's message</td></tr>
 * </table>
 */
final class Failures {
  private Failures() {}

  static final String OVERFLOW = "22003";

  static boolean isOverflow(SQLException e) {
    return OVERFLOW.equals(e.getSQLState());
  }

  /** The Tally exception for a failure of {@code what} (e.g. "incr of 'k'") on {@code store}. */
  static RuntimeException translate(SQLException e, String what, String store) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    if (e instanceof SQLTransientConnectionException) {
      return new StoreUnavailableException("no connection to " + store + " (" + what + "): " + e.getMessage()
          + "; nothing was sent", e);
    }
    if (state.startsWith("08") && socketTimedOut(e)) {
      return new StoreTimeoutException(store + " did not answer within the timeout (" + what + "): the"
          + " statement was in flight and may or may not have been applied; its connection was closed", e);
    }
    if (state.startsWith("08") || state.equals("57P01") || state.equals("57P02") || state.equals("57P03")) {
      return new StoreUnavailableException(store + " is unreachable (" + what + "): " + e.getMessage()
          + "; the statement was in flight and may or may not have been applied", e);
    }
    if (state.equals("57014")) {
      return new StoreTimeoutException(store + " did not answer within the statement timeout (" + what
          + "); the statement was cancelled and rolled back", e);
    }
    if (state.equals("42P01") || state.equals("42883")) {
      return new StoreException(store + " has no Tally schema (" + what + "): " + e.getMessage()
          + "; create it with `tally schema --store <uri> --apply`", e);
    }
    return new StoreException(store + " failed (" + what + "): " + e.getMessage(), e);
  }

  private static boolean socketTimedOut(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SocketTimeoutException) {
        return true;
      }
    }
    return false;
  }

  static WrongKindException limiterHere(String key) {
    return new WrongKindException(key, WrongKindException.Kind.LIMITER);
  }

  static WrongKindException counterHere(String key) {
    return new WrongKindException(key, WrongKindException.Kind.COUNTER);
  }

  static CounterOverflowException overflow(String key, Object delta) {
    return new CounterOverflowException("counter '" + key + "': adding " + delta + " leaves the signed"
        + " 64-bit range (or makes a floating value infinite); the value is unchanged");
  }
}
