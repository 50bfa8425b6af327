package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Tally;
import dev.tally.tck.LimiterVectorReplay;
import dev.tally.tck.LimiterVectors;
import dev.tally.tck.LimiterVectors.Keeping;
import dev.tally.tck.LimiterVectors.Stored;
import java.math.BigInteger;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The schema's limiter functions replay the kit's limiter vectors ({@link LimiterVectors}) on a
 * real PostgreSQL: every call decided by the function at the test clock, every decision and the
 * row it leaves (the words, tombstone or not, {@code at} and {@code exp}) equal to the machine's.
 */
class LimiterVectorsTest {

  @Test
  void limiterFunctionsDecideEveryVectorAsTheMachine() throws SQLException {
    PostgresServer server = PostgresServer.shared();
    List<Connection> opened = new CopyOnWriteArrayList<>();
    ThreadLocal<Connection> reads = ThreadLocal.withInitial(() -> {
      try {
        Connection c = server.connect();
        opened.add(c);
        return c;
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    });
    try {
      LimiterVectorReplay.Result r = LimiterVectorReplay.replay(LimiterVectors.generate("vectors-", Keeping.POSTGRESQL),
          // No sweeper: each replaying thread's store runs on its own clock, years from another's,
          // and would delete the rows another is replaying as long expired.
          clock -> Tally.builder(server.uri("sweep=0")).timeSource(clock).build(), key -> stored(reads.get(), key), 4);
      System.out.println("postgresql: " + r);
      assertThat(r.disagreements()).as(r.toString()).isZero();
      assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
    } finally {
      for (Connection c : opened) {
        c.close();
      }
    }
  }

  private static Stored stored(Connection db, String key) throws SQLException {
    try (PreparedStatement ps = db.prepareStatement("SELECT rec, exp, at FROM tally WHERE key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return null;
        }
        Long[] boxed = (Long[]) rs.getArray(1).getArray();
        long[] words = new long[boxed.length];
        for (int i = 0; i < words.length; i++) {
          words[i] = boxed[i];
        }
        return new Stored(rs.getLong(3), words, BigInteger.valueOf(rs.getLong(2)));
      }
    }
  }
}
