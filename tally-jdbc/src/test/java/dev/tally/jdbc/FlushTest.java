package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.StoreException;
import dev.tally.Tally;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The flush's protocol step by step, in one process: what the crash test exercises by killing. */
class FlushTest {
  private static final PostgresServer SERVER = PostgresServer.shared();
  private String table;
  private String ledger;
  private String sql;

  @BeforeEach
  void tables() {
    String u = UUID.randomUUID().toString().substring(0, 8);
    table = "episodes_" + u;
    ledger = "ledger_" + u;
    SERVER.execute("CREATE TABLE " + table + " (id int PRIMARY KEY, views bigint NOT NULL DEFAULT 0)");
    SERVER.execute("INSERT INTO " + table + " (id) VALUES (1), (2), (3)");
    SERVER.execute(PostgresSchema.ledgerDdl(ledger));
    sql = "UPDATE " + table + " SET views = views + :count WHERE id = :suffix::int";
  }

  private Flush.Builder flush(Tally tally) {
    return Flush.from(tally, "views:").into(SERVER.uri(""), sql).ledger(ledger);
  }

  private long views(int id) throws SQLException {
    return one("SELECT views FROM " + table + " WHERE id = " + id);
  }

  private static long one(String query) throws SQLException {
    try (Connection c = SERVER.connect(); PreparedStatement ps = c.prepareStatement(query); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void theSeedsFlushDoneOnceMovesEveryCountAndLeavesNothingPending() throws SQLException {
    try (Tally tally = Tally.open("mem:")) {
      Counters c = tally.counters();
      c.incr("views:1", 2000);
      c.incr("views:2");
      try (Flush f = flush(tally).build()) {
        FlushResult r = f.run();
        assertThat(r).isEqualTo(new FlushResult(0, 1, 2, 2001, 0));
        assertThat(f.run()).as("nothing left").isEqualTo(new FlushResult(0, 0, 0, 0, 0));
      }
      assertThat(views(1)).isEqualTo(2000);
      assertThat(views(2)).isEqualTo(1);
      assertThat(c.keys("views:")).isEmpty();
    }
  }

  @Test
  void anInterruptedBatchIsFinishedByReplayingItsPopsWithTheSameIds() throws SQLException {
    try (Tally tally = Tally.open("mem:")) {
      Counters c = tally.counters();
      c.incr("views:1", 5);
      c.incr("views:2", 7);
      // A flusher died after recording the batch and popping its first key.
      String batch = "b-" + UUID.randomUUID();
      SERVER.execute("INSERT INTO " + ledger + " (batch, prefix, keys) VALUES ('" + batch + "', 'views:',"
          + " ARRAY['views:1', 'views:2'])");
      assertThat(c.withOperationId(batch + ":0").pop("views:1")).hasValue(5);
      c.incr("views:1", 100); // counted after that pop: belongs to the next batch
      try (Flush f = flush(tally).build()) {
        FlushResult r = f.run();
        assertThat(r.resumed()).isEqualTo(1);
        assertThat(r.total()).as("5 replayed, 7 popped now, then 100 in a new batch").isEqualTo(112);
      }
      assertThat(views(1)).isEqualTo(105);
      assertThat(views(2)).isEqualTo(7);
      assertThat(one("SELECT total FROM " + ledger + " WHERE batch = '" + batch + "'")).isEqualTo(12);
    }
  }

  @Test
  void aBatchWhoseStatementsFailedIsRolledBackAndFinishedNextTime() throws SQLException {
    try (Tally tally = Tally.open("mem:")) {
      tally.counters().incr("views:1", 3);
      tally.counters().incr("views:x", 4); // not a number: the statement fails
      try (Flush f = flush(tally).build()) {
        assertThatThrownBy(f::run).isInstanceOf(StoreException.class).hasMessageContaining("next run");
        assertThat(views(1)).as("rolled back together").isZero();
        assertThat(one("SELECT count(*) FROM " + ledger + " WHERE applied_at IS NULL")).isEqualTo(1);
        tally.counters().incr("views:1", 10);
        SERVER.execute("ALTER TABLE " + table + " ALTER COLUMN id TYPE text");
        SERVER.execute("INSERT INTO " + table + " (id) VALUES ('x')");
      }
      String textSql = "UPDATE " + table + " SET views = views + :count WHERE id = :suffix";
      try (Flush f = Flush.from(tally, "views:").into(SERVER.uri(""), textSql).ledger(ledger).build()) {
        FlushResult r = f.run();
        assertThat(r.resumed()).isEqualTo(1);
        assertThat(r.total()).isEqualTo(17);
      }
      assertThat(one("SELECT views FROM " + table + " WHERE id = '1'")).isEqualTo(13);
      assertThat(one("SELECT views FROM " + table + " WHERE id = 'x'")).isEqualTo(4);
    }
  }

  @Test
  void aSecondFlusherOfThePrefixIsRefusedAtOnceAndChangesNothing() throws SQLException {
    try (Tally tally = Tally.open("mem:")) {
      tally.counters().incr("views:1", 3);
      AtomicReference<Throwable> second = new AtomicReference<>();
      try (Flush other = flush(tally).build()) {
        Flush.Listener inTheMiddle = new Flush.Listener() {
          @Override
          public void recorded(String batch, List<String> keys) {
            try {
              other.run();
            } catch (RuntimeException e) {
              second.set(e);
            }
          }
        };
        try (Flush first = flush(tally).listener(inTheMiddle).build()) {
          assertThat(first.run().total()).isEqualTo(3);
        }
      }
      assertThat(second.get()).isInstanceOf(FlushBusyException.class).hasMessageContaining("another flusher");
      assertThat(views(1)).isEqualTo(3);
      assertThat(one("SELECT count(*) FROM " + ledger)).isEqualTo(1);
    }
  }

  /**
   * A role whose sessions commit asynchronously (on a server that does too): the flush's ledger
   * and apply transactions still commit synchronously. A trigger on the ledger records the
   * setting each of them ran with.
   */
  @Test
  void theLedgerAndApplyTransactionsCommitSynchronouslyWhateverTheRoleOrServerSays() throws SQLException {
    SERVER.execute("DO $$ BEGIN CREATE ROLE flush_async LOGIN SUPERUSER; EXCEPTION WHEN duplicate_object"
        + " THEN NULL; END $$");
    SERVER.execute("ALTER ROLE flush_async SET synchronous_commit = off");
    SERVER.execute("CREATE TABLE " + ledger + "_commits (op text, setting text)");
    SERVER.execute("CREATE FUNCTION " + ledger + "_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        + " INSERT INTO " + ledger + "_commits VALUES (TG_OP, current_setting('synchronous_commit'));"
        + " RETURN NEW; END $$");
    SERVER.execute("CREATE TRIGGER note BEFORE INSERT OR UPDATE ON " + ledger + " FOR EACH ROW EXECUTE FUNCTION "
        + ledger + "_note()");
    String asAsync = SERVER.uriAs("flush_async", "");
    // the precondition, or this test proves nothing: the role's sessions do commit asynchronously
    try (Connection c = java.sql.DriverManager.getConnection(SERVER.jdbcUrl().replace("user=tally", "user=flush_async"));
        PreparedStatement ps = c.prepareStatement("SHOW synchronous_commit"); ResultSet rs = ps.executeQuery()) {
      rs.next();
      assertThat(rs.getString(1)).isEqualTo("off");
    }
    try (Tally tally = Tally.open("mem:")) {
      tally.counters().incr("views:1", 5);
      try (Flush f = Flush.from(tally, "views:").into(asAsync, sql).ledger(ledger).build()) {
        assertThat(f.run().total()).isEqualTo(5);
      }
    }
    try (Connection c = SERVER.connect(); PreparedStatement ps = c.prepareStatement(
        "SELECT op, setting FROM " + ledger + "_commits ORDER BY op"); ResultSet rs = ps.executeQuery()) {
      List<String> seen = new java.util.ArrayList<>();
      while (rs.next()) {
        seen.add(rs.getString(1) + " " + rs.getString(2));
      }
      assertThat(seen).as("the ledger's record (INSERT) and its apply (UPDATE)").containsExactly("INSERT on", "UPDATE on");
    }
  }

  @Test
  void anUnfinishedBatchOlderThanTheRetentionIsRefusedNotReplayed() {
    try (Tally tally = Tally.open("mem:")) {
      SERVER.execute("INSERT INTO " + ledger + " (batch, prefix, keys, created_at) VALUES ('old', 'views:',"
          + " ARRAY['views:1'], clock_timestamp() - interval '2 hours')");
      try (Flush f = flush(tally).retention(Duration.ofHours(1)).build()) {
        assertThatThrownBy(f::run).isInstanceOf(StoreException.class).hasMessageContaining("retention")
            .hasMessageContaining("old");
      }
    }
  }

  @Test
  void countsWithoutARowAreReportedAndKeptInTheLedger() throws SQLException {
    try (Tally tally = Tally.open("mem:")) {
      tally.counters().incr("views:9", 4);
      try (Flush f = flush(tally).build()) {
        assertThat(f.run().unmatched()).isEqualTo(1);
      }
      assertThat(one("SELECT counts[1] FROM " + ledger)).isEqualTo(4);
    }
  }

  @Test
  void aMissingLedgerIsAnErrorNamingTheCommand() {
    try (Tally tally = Tally.open("mem:");
        Flush f = Flush.from(tally, "views:").into(SERVER.uri(""), sql).ledger("no_such_ledger").build()) {
      assertThatThrownBy(f::run).isInstanceOf(StoreException.class).hasMessageContaining("tally schema --ledger");
    }
  }
}
