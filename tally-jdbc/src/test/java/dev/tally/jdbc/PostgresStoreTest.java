package dev.tally.jdbc;

import dev.tally.tck.Internals;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import dev.tally.tck.ManualTimeSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** What the kit cannot see: the schema rule, the database's clock, the layout, the sweep, the URIs. */
class PostgresStoreTest {
  private static final PostgresServer SERVER = PostgresServer.shared();

  private static String unique(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8) + ":";
  }

  private static long sql(String query, Object... args) throws SQLException {
    try (Connection c = SERVER.connect(); PreparedStatement ps = c.prepareStatement(query)) {
      for (int i = 0; i < args.length; i++) {
        ps.setObject(i + 1, args[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  @Test
  void openingWithoutTheSchemaFailsAndNamesTheCommand() throws SQLException {
    String uri = SERVER.uri("table=nothing_here");
    assertThatThrownBy(() -> Tally.open(uri))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("no Tally schema")
        .hasMessageContaining("tally schema --store");
    assertThat(sql("SELECT count(*) FROM pg_class WHERE relname LIKE 'nothing_here%'"))
        .as("open creates nothing").isZero();
  }

  @Test
  void theSchemaCommandsDdlCreatesAWorkingStoreUnderAnyName() {
    PostgresSchema.applyTo(SERVER.uri("table=other_tally"));
    PostgresSchema.applyTo(SERVER.uri("table=other_tally")); // again: harmless
    try (Tally tally = Tally.open(SERVER.uri("table=other_tally"))) {
      assertThat(tally.counters().incr("k", 5)).isEqualTo(5);
      assertThat(tally.limiter("l", Limit.tokenBucket(2, Duration.ofMinutes(1))).tryAcquire()).isTrue();
    }
  }

  @Test
  void withoutASuppliedClockExpiryAndLimitersRunOnTheDatabasesClock() throws SQLException {
    String p = unique("dbclock");
    try (Tally tally = Tally.open(SERVER.uri(""))) {
      Counters c = tally.counters();
      c.put(p + "k", 1, Duration.ofHours(1));
      tally.limiter(p + "l", Limit.tokenBucket(10, Duration.ofMinutes(1))).tryAcquire();
      long dbNow = sql("SELECT round(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint");
      long exp = sql("SELECT exp FROM tally WHERE key = ?", p + "k");
      assertThat(exp - dbNow).isBetween(Duration.ofHours(1).minusSeconds(10).toNanos(), Duration.ofHours(1).toNanos());
      // a token bucket's state is the instant it is full again: one token (6 s) after the database's now
      long fullAt = sql("SELECT rec[4] FROM tally WHERE key = ?", p + "l");
      assertThat(fullAt - dbNow).isBetween(Duration.ofSeconds(6).minusSeconds(10).toNanos(), Duration.ofSeconds(6).toNanos());
    }
  }

  /**
   * A joint decision on the database's clock: one instant for every key, read once by the
   * function; a refusal leaves every row as it was (the same "at", so no key's decision instant
   * moved either), and a grant writes every row at that one instant.
   */
  @Test
  void jointDecisionsOnTheDatabasesClockWriteEveryRowAtOneInstantOrNone() throws SQLException {
    String p = unique("dbclock-joint");
    try (Tally tally = Tally.open(SERVER.uri(""))) {
      RateLimiter user = tally.limiter(p + "user", Limit.tokenBucket(2, Duration.ofHours(1)));
      RateLimiter global = tally.limiter(p + "global", Limit.slidingWindow(10, Duration.ofHours(1)));
      assertThat(tally.decide(List.of(user, global), 2).allowed()).isTrue();
      long at = sql("SELECT at FROM tally WHERE key = ?", p + "user");
      assertThat(sql("SELECT at FROM tally WHERE key = ?", p + "global")).as("one instant").isEqualTo(at);
      assertThat(tally.decide(List.of(global, user), 1).refusedBy()).isEqualTo(user.name());
      assertThat(sql("SELECT at FROM tally WHERE key = ?", p + "global")).as("nothing written").isEqualTo(at);
      assertThat(global.available()).isEqualTo(8);
    }
  }

  @Test
  void aSchemaWithoutTheJointFunctionSaysHowToFixIt() throws SQLException {
    String table = "joint_old_" + UUID.randomUUID().toString().substring(0, 8).replace('-', '_');
    try (Tally tally = Tally.open(SERVER.uri("table=" + table + "&limiterBatch=off"))) {
      throw new AssertionError("opened a store with no schema: " + tally);
    } catch (StoreException expected) {
      // no schema yet: apply it, then drop the joint function as an older schema lacks it
    }
    PostgresSchema.applyTo(SERVER.uri("table=" + table));
    try (Connection c = SERVER.connect(); Statement st = c.createStatement()) {
      st.execute("DROP FUNCTION " + table + "_limit_all");
    }
    try (Tally tally = Tally.open(SERVER.uri("table=" + table))) {
      RateLimiter a = tally.limiter("a", Limit.tokenBucket(2, Duration.ofHours(1)));
      RateLimiter b = tally.limiter("b", Limit.tokenBucket(2, Duration.ofHours(1)));
      assertThatThrownBy(() -> tally.decide(List.of(a, b), 1))
          .isInstanceOf(StoreException.class)
          .hasMessageContaining(table + "_limit_all")
          .hasMessageContaining("apply the schema again");
    }
  }

  @Test
  void operationIdsAndLimitersWorkOnTheDatabasesClockToo() throws SQLException {
    String p = unique("dbclock-ids");
    try (Tally tally = Tally.open(SERVER.uri(""))) {
      Counters once = tally.counters().withOperationId("id-" + p.replace(":", ""));
      assertThat(once.incr(p + "k", 5)).isEqualTo(5);
      assertThat(once.incr(p + "k", 5)).as("replayed").isEqualTo(5);
      assertThat(tally.counters().get(p + "k")).hasValue(5);
      long dbNow = sql("SELECT round(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint");
      long exp = sql("SELECT exp FROM tally_ops WHERE id = ?", "id-" + p.replace(":", ""));
      assertThat(exp - dbNow).as("kept for the retention, on the database's clock")
          .isBetween(Duration.ofHours(1).minusSeconds(10).toNanos(), Duration.ofHours(1).toNanos());
      RateLimiter l = tally.limiter(p + "l", Limit.fixedWindow(2, Duration.ofHours(1)));
      assertThat(l.tryAcquire()).isTrue();
      assertThat(l.tryAcquire()).isTrue();
      assertThat(l.tryAcquire()).isFalse();
      l.reset();
      assertThat(sql("SELECT cardinality(rec) FROM tally WHERE key = ?", p + "l")).as("a tombstone").isZero();
      assertThat(l.tryAcquire()).isTrue();
    }
  }

  @Test
  void aSuppliedClockDecidesInstead() throws SQLException {
    String p = unique("manual");
    ManualTimeSource clock = new ManualTimeSource();
    try (Tally tally = Tally.builder(SERVER.uri("")).timeSource(clock).build()) {
      tally.counters().put(p + "k", 1, Duration.ofSeconds(3));
      assertThat(sql("SELECT exp FROM tally WHERE key = ?", p + "k")).isEqualTo(clock.nanos() + 3_000_000_000L);
    }
  }

  @Test
  void rowsAreReadableWithPsql() throws SQLException {
    String p = unique("layout");
    try (Tally tally = Tally.open(SERVER.uri(""))) {
      tally.counters().incr(p + "i", 7);
      tally.counters().incr(p + "f", 0.5);
      tally.limiter(p + "l", Limit.fixedWindow(10, Duration.ofMinutes(1))).tryAcquire(3);
    }
    assertThat(sql("SELECT ival FROM tally WHERE key = ? AND fval IS NULL AND rec IS NULL AND exp IS NULL", p + "i"))
        .isEqualTo(7);
    assertThat(sql("SELECT (fval * 10)::bigint FROM tally WHERE key = ? AND ival IS NULL", p + "f")).isEqualTo(5);
    assertThat(sql("SELECT rec[1] * 1000 + rec[2] * 10 + rec[5] FROM tally WHERE key = ?", p + "l"))
        .as("tag 4 (fixed window), limit 10, count 3").isEqualTo(4103);
  }

  @Test
  void keysUnderAPrefixAreAnIndexRangeScan() throws SQLException {
    String p = unique("keys");
    try (Tally tally = Tally.open(SERVER.uri(""))) {
      for (int i = 0; i < 50; i++) {
        tally.counters().incr(p + i);
      }
      tally.counters().incr(p.substring(0, p.length() - 1) + "_x"); // LIKE's _ must not match
      assertThat(tally.counters().keys(p)).hasSize(50);
    }
    try (Connection c = SERVER.connect(); Statement s = c.createStatement()) {
      s.execute("SET enable_seqscan = off"); // a tiny table would be scanned anyway: ask whether the index can serve
      try (ResultSet rs = s.executeQuery("EXPLAIN SELECT key FROM tally t WHERE t.key LIKE 'keys-ab\\_c:%'"
          + " AND t.rec IS NULL")) {
        StringBuilder plan = new StringBuilder();
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
        assertThat(plan.toString()).contains("Index Scan on tally_pkey").contains("Index Cond: ((key >= ");
      }
    }
  }

  @Test
  void theSweepDeletesExpiredRowsAndReadsNeverSawThem() throws SQLException {
    String p = unique("sweep");
    ManualTimeSource clock = new ManualTimeSource();
    try (Tally tally = Tally.builder(SERVER.uri("sweep=0")).timeSource(clock).build()) {
      Counters c = tally.counters();
      for (int i = 0; i < 20; i++) {
        c.put(p + i, i, Duration.ofSeconds(1));
      }
      c.put(p + "kept", 1, null);
      clock.advance(Duration.ofSeconds(2));
      assertThat(c.keys(p)).containsExactly(p + "kept");
      assertThat(sql("SELECT count(*) FROM tally WHERE key LIKE ?", p + "%")).as("still there").isEqualTo(21);
      int swept = ((PostgresStore) Internals.storeOf(tally)).sweep();
      assertThat(swept).isGreaterThanOrEqualTo(20);
      assertThat(sql("SELECT count(*) FROM tally WHERE key LIKE ?", p + "%")).isEqualTo(1);
    }
  }

  @Test
  void anExistingDataSourceCanBeHandedIn() {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(SERVER.jdbcUrl());
    config.setMaximumPoolSize(2);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      PostgresDataSources.register("app", ds);
      try (Tally tally = Tally.open("postgresql:?datasource=app&table=tally")) {
        assertThat(tally.counters().incr(unique("ds") + "k")).isEqualTo(1);
      }
      assertThat(ds.isClosed()).as("borrowed, not closed").isFalse();
    } finally {
      PostgresDataSources.unregister("app");
    }
    assertThatThrownBy(() -> Tally.open("postgresql:?datasource=app"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PostgresDataSources.register");
  }

  /**
   * A borrowed HikariCP pool is asked for a connection with what is left of the call's timeout,
   * not its own longer connectionTimeout: a call must not outlive its timeout by the pool's wait.
   */
  @Test
  void aBorrowedHikariPoolWaitsNoLongerThanTheCallsTimeout() throws SQLException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(SERVER.jdbcUrl());
    config.setMaximumPoolSize(1);
    config.setConnectionTimeout(10_000);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      PostgresDataSources.register("busy", ds);
      try (Tally tally = Tally.open("postgresql:?datasource=busy&table=tally&timeout=1s");
          Connection held = ds.getConnection()) {
        long started = System.nanoTime();
        assertThatThrownBy(() -> tally.counters().incr(unique("busy") + "k"))
            .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("nothing was sent");
        // The bound is 1 s and a grace; 5 s leaves room for a loaded machine, and is still half
        // the pool's own wait.
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
        assertThat(held.isValid(1)).isTrue();
      }
    } finally {
      PostgresDataSources.unregister("busy");
    }
  }

  @Test
  void aDecisionsAsynchronousCommitStaysInItsOwnTransaction() throws SQLException {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(SERVER.jdbcUrl());
    config.setMaximumPoolSize(1); // the store's decisions and this test's query share one connection
    config.setConnectionInitSql("SET synchronous_commit = remote_write");
    try (HikariDataSource ds = new HikariDataSource(config)) {
      PostgresDataSources.register("one-connection", ds);
      String p = unique("commit");
      try (Tally tally = Tally.open("postgresql:?datasource=one-connection&table=tally")) {
        RateLimiter l = tally.limiter(p + "l", Limit.tokenBucket(2, Duration.ofMinutes(1)));
        assertThat(l.tryAcquire()).isTrue();
        assertThat(l.tryAcquire()).isTrue();
        assertThat(l.tryAcquire()).as("the two decisions committed").isFalse();
        tally.counters().incr(p + "k");
      }
      try (Connection c = ds.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SHOW synchronous_commit")) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString(1)).as("the session's setting, untouched by the decisions").isEqualTo("remote_write");
      }
    } finally {
      PostgresDataSources.unregister("one-connection");
    }
  }

  @Test
  void badUrisAreRefusedSayingWhatAGoodOneLooksLike() {
    List<String> bad = new ArrayList<>(List.of("postgresql:", "postgresql://host", "postgresql://h/db?table=Bad-Name",
        "postgresql://h/db?pool=0", "postgresql://h/db?timeout=soon", "postgresql://h/db?colour=blue",
        "postgresql://h/db?datasource=x", "postgresql://h/db?limiterCommit=sometimes"));
    for (String uri : bad) {
      assertThatThrownBy(() -> Tally.open(uri)).as(uri).isInstanceOf(IllegalArgumentException.class)
          .hasMessageMatching("(?s).*(postgresql:|table|pool|duration|options|both|limiterCommit must be async).*");
    }
  }

  @Test
  void aServerThatIsDownIsUnavailableAtOnce() {
    PostgresServer down = PostgresServer.start();
    down.execute(PostgresSchema.storeDdl("tally"));
    try (Tally tally = Tally.open(down.uri("timeout=1s"))) {
      tally.counters().incr("k");
      down.stop();
      assertThatThrownBy(() -> tally.counters().incr("k")).isInstanceOf(StoreUnavailableException.class);
      assertThatThrownBy(() -> tally.limiter("l", Limit.tokenBucket(1, Duration.ofSeconds(1))).tryAcquire())
          .isInstanceOf(StoreUnavailableException.class);
    }
  }
}
