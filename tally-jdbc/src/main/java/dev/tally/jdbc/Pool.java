package dev.tally.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.Executor;
import javax.sql.DataSource;

/**
 * The connections of a store: a HikariCP pool of its own, or a borrowed DataSource it never closes.
 *
 * <p>Every call leases its connection until its {@link Deadline}: the wait for the connection is
 * bounded by what is left of the call's {@code timeout} (for a borrowed DataSource other than
 * HikariCP's, by the DataSource's own wait), and the connection's network timeout is set to what is left of the call's time, so a
 * server that stops answering (frozen, partitioned) fails the call instead of holding it.
 */
final class Pool implements AutoCloseable {
  /** pgjdbc ignores the executor of {@code setNetworkTimeout}; the JDBC API asks for one. */
  private static final Executor INLINE = Runnable::run;

  private final DataSource dataSource;
  private final HikariDataSource owned;
  private final HikariPool hikari; // of owned: its wait can be given per call (see waitable())

  private Pool(DataSource dataSource, HikariDataSource owned) {
    this.dataSource = dataSource;
    this.owned = owned;
    this.hikari = owned == null ? null : (HikariPool) owned.getHikariPoolMXBean();
  }

  static Pool open(PostgresSettings s) {
    if (s.dataSourceName != null) {
      return new Pool(PostgresDataSources.lookup(s.dataSourceName), null);
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(s.jdbcUrl);
    if (s.user != null) {
      config.setUsername(s.user);
    }
    if (s.password != null) {
      config.setPassword(s.password);
    }
    config.setMaximumPoolSize(s.pool);
    config.setMinimumIdle(Math.min(2, s.pool));
    config.setPoolName("tally-postgresql");
    long timeoutMs = Math.max(250, s.timeout.toMillis());
    config.setConnectionTimeout(timeoutMs);
    // Hikari checks a connection idle for a while before handing it out; a frozen server must
    // not hold that check for longer than the grace a call has past its timeout.
    config.setValidationTimeout(Math.min(timeoutMs, Deadline.grace(s.timeout).toMillis()));
    config.setInitializationFailTimeout(-1); // open even while the server is down: calls then fail
    // A client paused mid-transaction (a GC pause, a frozen VM, SIGSTOP) would hold its row locks
    // until it resumes, stalling every other caller of those keys: the server ends a session left
    // idle in a transaction for half a call's timeout, rolling it back, so that a caller waiting on
    // its lock still has half its own call left to be served in.
    config.addDataSourceProperty("options", "-c statement_timeout=" + s.timeout.toMillis()
        + " -c idle_in_transaction_session_timeout=" + Math.max(1, s.timeout.toMillis() / 2));
    // pgjdbc counts these in whole seconds. The socket timeout is only the floor for what runs
    // outside a leased call (Hikari's own statements); a lease sets the exact time left.
    int seconds = wholeSeconds(s.timeout);
    config.addDataSourceProperty("socketTimeout", String.valueOf(wholeSeconds(s.answerTimeout())));
    config.addDataSourceProperty("connectTimeout", String.valueOf(seconds));
    config.addDataSourceProperty("loginTimeout", String.valueOf(seconds));
    config.addDataSourceProperty("cancelSignalTimeout", String.valueOf(seconds));
    config.addDataSourceProperty("tcpKeepAlive", "true");
    config.addDataSourceProperty("ApplicationName", "tally");
    HikariDataSource ds = new HikariDataSource(config);
    return new Pool(ds, ds);
  }

  private static int wholeSeconds(Duration d) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (d.toMillis() + 999) / 1000));
  }

  /**
   * A connection for a call that must be over by {@code deadline}, its network timeout set to the
   * time left. Fails with {@link SQLTransientConnectionException} (nothing was sent) if no
   * connection came in time.
   */
  Lease lease(Deadline deadline) throws SQLException {
    long wait = deadline.acquireMillisLeft();
    if (wait <= 0) {
      throw new SQLTransientConnectionException("the timeout passed before a connection was free");
    }
    HikariPool waitable = waitable();
    Connection c = waitable != null ? waitable.getConnection(wait) : dataSource.getConnection();
    try {
      int previous = c.getNetworkTimeout();
      long left = deadline.answerMillisLeft();
      if (left <= 0) {
        throw new SQLTransientConnectionException("the timeout passed while waiting for a connection");
      }
      c.setNetworkTimeout(INLINE, (int) Math.min(Integer.MAX_VALUE, left));
      return new Lease(c, previous);
    } catch (SQLException | RuntimeException e) {
      try {
        c.close();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  /**
   * The HikariCP pool to ask for a connection with the call's own wait: the store's, or a borrowed
   * HikariDataSource's once it has started. Asked through the DataSource, a borrowed pool would
   * wait its whole {@code connectionTimeout} however little of the call's time is left (a rate
   * limiter call that waited for its batch's leader before leading one itself), and the call
   * would outlive its timeout by that much. Null for another DataSource: its wait is its own.
   */
  private HikariPool waitable() {
    if (hikari != null) {
      return hikari;
    }
    return dataSource instanceof HikariDataSource borrowed
        && borrowed.getHikariPoolMXBean() instanceof HikariPool started ? started : null;
  }

  /** A connection held for one call; closing it restores its network timeout and returns it. */
  static final class Lease implements AutoCloseable {
    final Connection connection;
    private final int previousNetworkTimeout;

    private Lease(Connection connection, int previousNetworkTimeout) {
      this.connection = connection;
      this.previousNetworkTimeout = previousNetworkTimeout;
    }

    @Override
    public void close() throws SQLException {
      try {
        // A borrowed DataSource's pool may not reset it, and its next user should not inherit ours.
        if (!connection.isClosed()) {
          connection.setNetworkTimeout(INLINE, previousNetworkTimeout);
        }
      } catch (SQLException e) {
        // broken meanwhile: the pool discards it
      } finally {
        connection.close();
      }
    }
  }

  DataSource dataSource() {
    return dataSource;
  }

  @Override
  public void close() {
    if (owned != null) {
      owned.close();
    }
  }
}
