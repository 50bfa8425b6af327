package dev.tally.jdbc;

import dev.tally.StoreException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The DDL of a store's table ({@code schema.sql}, a resource anyone can read) and of a flush
 * ledger ({@code flush-ledger.sql}), rendered for a table name. Tally never creates either by
 * itself: {@code tally schema} prints or applies them, or an application runs
 * {@link #storeDdl} through its own migrations.
 */
public final class PostgresSchema {
  private PostgresSchema() {}

  /** The DDL of a store whose table is {@code table} (e.g. {@code tally} or {@code metrics.tally}). */
  public static String storeDdl(String table) {
    String t = PostgresSettings.table(table);
    return resource("schema.sql").replace("${table}", t).replace("${name}", unqualified(t));
  }

  /** The DDL of a flush ledger table named {@code ledger}. */
  public static String ledgerDdl(String ledger) {
    String t = PostgresSettings.table(ledger);
    return resource("flush-ledger.sql").replace("${ledger}", t).replace("${name}", unqualified(t));
  }

  /** The DDL of the store named by {@code uri} (its {@code table} option). */
  public static String storeDdlFor(String uri) {
    return storeDdl(PostgresSettings.parse(uri).table);
  }

  /** Runs {@code ddl} in one transaction on {@code dataSource}. */
  public static void apply(DataSource dataSource, String ddl) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute(ddl);
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new StoreException("applying the schema failed: " + e.getMessage(), e);
    }
  }

  /** Applies the store schema to the database of {@code uri}. */
  public static void applyTo(String uri) {
    PostgresSettings s = PostgresSettings.parse(uri);
    try (Pool pool = Pool.open(s)) {
      apply(pool.dataSource(), storeDdl(s.table));
    }
  }

  /** Creates the flush ledger {@code ledger} in the database of {@code uri}. */
  public static void applyLedgerTo(String uri, String ledger) {
    try (Pool pool = Pool.open(PostgresSettings.parse(uri))) {
      apply(pool.dataSource(), ledgerDdl(ledger));
    }
  }

  /**
   * Fails unless the store's table and limiter functions exist, naming the command that creates
   * them: a store is never created silently on open. {@code batch}: the batch function too.
   */
  static void check(Connection c, String table, String describe, boolean batch) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL, to_regclass(?) IS NOT NULL,"
        + " to_regprocedure(?) IS NOT NULL, to_regprocedure(?) IS NOT NULL")) {
      ps.setString(1, table);
      ps.setString(2, table + "_ops");
      ps.setString(3, table + "_limit(text,text,bigint,bigint,bigint[],bigint[])");
      ps.setString(4, table + "_limit_batch(text[],text[],bigint[],bigint[],bigint[],int[],bigint[],int[])");
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1) || !rs.getBoolean(2) || !rs.getBoolean(3)) {
          throw new StoreException("the PostgreSQL store " + describe + " has no Tally schema"
              + (rs.getBoolean(1) ? " (the table exists, but not all of " + table + "_ops and " + table + "_limit)" : "")
              + "; create it with `tally schema --store <uri> --apply`, or run the DDL that"
              + " `tally schema --store <uri>` prints (dev/tally/jdbc/schema.sql)");
        }
        if (batch && !rs.getBoolean(4)) {
          throw new StoreException("the Tally schema of the PostgreSQL store " + describe + " predates "
              + table + "_limit_batch, which limiterBatch (on by default) needs; apply the schema again"
              + " (`tally schema --store <uri> --apply`; re-running it is harmless), or add limiterBatch=off to the URI");
        }
      }
    }
  }

  private static String unqualified(String table) {
    int dot = table.indexOf('.');
    return dot < 0 ? table : table.substring(dot + 1);
  }

  private static String resource(String name) {
    try (InputStream in = PostgresSchema.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource dev/tally/jdbc/" + name + " is missing from the tally-jdbc jar");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
