package dev.tally.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tally.Tally;
import dev.tally.tck.ConformanceSuite;
import dev.tally.tck.StoreConfiguration;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The whole kit against one real PostgreSQL server that the tests start, in each configuration
 * that takes its own path: a pool of the store's own, a borrowed DataSource of two connections
 * (so transactions, operation ids and limiters queue for connections), and a schema-qualified
 * table whose limiter decisions commit as the server says (the others commit them asynchronously,
 * the default, which is another statement), and one whose limiter calls each go alone
 * ({@code limiterBatch=off}; the others decide concurrent calls together). Each has a table of its own: operation ids are global to a store, and the kit reuses
 * some literal ids in every configuration. The kit's clock is supplied, so every statement decides at it (the time rule of
 * {@code StoreContext}) and time passes without sleeping.
 *
 * <p>Every configuration runs with {@code timeout=2s} and is freezable: the kit's server-fault
 * case stops the shared server ({@link PostgresServer#freeze}) for {@link #FREEZE}, which is safe
 * because the tests run one at a time. The borrowed DataSource is configured as the
 * documentation asks of an application's pool: its wait for a connection bounded by the same
 * timeout (Tally bounds the socket of each connection it borrows, but not the pool's wait).
 */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
class PostgresConformanceTest extends ConformanceSuite {
  static final Duration TIMEOUT = Duration.ofSeconds(2);
  static final Duration FREEZE = Duration.ofSeconds(4);

  PostgresConformanceTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    PostgresServer server = PostgresServer.shared();
    server.execute("CREATE SCHEMA IF NOT EXISTS tck");
    server.execute(PostgresSchema.storeDdl("tck.counts"));
    server.execute(PostgresSchema.storeDdl("tck_borrowed"));
    server.execute(PostgresSchema.storeDdl("tck_alone"));
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(server.jdbcUrl());
    config.setMaximumPoolSize(2);
    config.setPoolName("borrowed");
    config.setConnectionTimeout(TIMEOUT.toMillis());
    config.setValidationTimeout(500);
    PostgresDataSources.register("borrowed", new HikariDataSource(config));
    return List.of(
        StoreConfiguration.of("postgresql", clock ->
            Tally.builder(server.uri("pool=16&timeout=2s")).timeSource(clock).build()),
        StoreConfiguration.of("postgresql datasource (2 connections)", clock ->
            Tally.builder("postgresql:?datasource=borrowed&table=tck_borrowed&timeout=2s").timeSource(clock).build())
            .operationsPerThread(500),
        StoreConfiguration.of("postgresql table=tck.counts limiterCommit=server", clock ->
            Tally.builder(server.uri("table=tck.counts&limiterCommit=server&timeout=2s")).timeSource(clock).build()),
        StoreConfiguration.of("postgresql table=tck_alone limiterBatch=off", clock ->
            Tally.builder(server.uri("table=tck_alone&limiterBatch=off&timeout=2s")).timeSource(clock).build()))
        .stream().map(c -> c.freezable(TIMEOUT, FREEZE, server)).toList();
  }
}
