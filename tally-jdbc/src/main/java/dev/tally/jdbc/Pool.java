package dev.tally.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import javax.sql.DataSource;

/** The connections of a store: a HikariCP pool of its own, or a borrowed DataSource it never closes. */
final class Pool implements AutoCloseable {
  private final DataSource dataSource;
  private final HikariDataSource owned;

  private Pool(DataSource dataSource, HikariDataSource owned) {
    this.dataSource = dataSource;
    this.owned = owned;
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
    config.setConnectionTimeout(Math.max(250, s.timeout.toMillis()));
    config.setInitializationFailTimeout(-1); // open even while the server is down: calls then fail
    config.addDataSourceProperty("options", "-c statement_timeout=" + s.timeout.toMillis());
    config.addDataSourceProperty("tcpKeepAlive", "true");
    config.addDataSourceProperty("ApplicationName", "tally");
    HikariDataSource ds = new HikariDataSource(config);
    return new Pool(ds, ds);
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
