package dev.tally.jdbc;

import dev.tally.StoreException;
import dev.tally.TimeSource;
import dev.tally.WrongKindException;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyMachine;
import dev.tally.spi.ConcurrencyRecord;
import dev.tally.spi.ConcurrencyResult;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Map;

/**
 * Concurrency limits in the store's table: a limit is a row whose {@code rec} holds its
 * {@link ConcurrencyRecord}'s words, with {@code ver} = {@link #FORMAT} (so the rate limiter
 * functions refuse it as another record format, and counter statements as a limiter's row),
 * {@code at} its latest instant and no expiry (the fencing counter outlives every lease). No
 * schema change: the table's columns already hold it.
 *
 * <p>One step is one database transaction: make sure the row exists
 * ({@code INSERT … ON CONFLICT DO NOTHING}), lock it ({@code SELECT … FOR UPDATE}), read the clock
 * after the lock is held, run {@link ConcurrencyMachine} here, and write the row if it changed.
 * Holding the row lock from the read to the commit is what makes the check and the grant one
 * step for every process and host. The clock is the database's ({@code statement_timestamp()} of
 * the statement run once the lock is held, microsecond-exact) unless the user supplied one.
 */
final class PostgresConcurrency {
  /** {@code ver} of a concurrency limit's row: not a {@code LimiterRecord.VERSION}. */
  static final int FORMAT = -1;

  private static final String CREATE = """
      INSERT INTO ${table} (key, rec, ver, at) VALUES (:key, :empty, %d, NULL) ON CONFLICT (key) DO NOTHING"""
      .formatted(FORMAT);
  private static final String LOCK = """
      SELECT t.rec, t.ver, t.at, t.ival IS NOT NULL OR t.fval IS NOT NULL, t.exp
      FROM ${table} t WHERE t.key = :key FOR UPDATE""";
  private static final String NOW = "SELECT :now";
  private static final String WRITE = """
      UPDATE ${table} SET rec = :rec, ver = %d, at = :at, exp = NULL, ival = NULL, fval = NULL
      WHERE key = :key""".formatted(FORMAT);

  private final Sql create;
  private final Sql lock;
  private final Sql now;
  private final Sql write;
  private final boolean serverClock;
  private final TimeSource clock;

  PostgresConcurrency(String table, boolean serverClock, TimeSource clock) {
    this.create = Sql.of(CREATE, table, serverClock);
    this.lock = Sql.of(LOCK, table, serverClock);
    this.now = Sql.of(NOW, table, serverClock);
    this.write = Sql.of(WRITE, table, serverClock);
    this.serverClock = serverClock;
    this.clock = clock;
  }

  ConcurrencyResult step(Connection c, ConcurrencyCall call) throws SQLException {
    c.setAutoCommit(false);
    boolean committed = false;
    try {
      String key = call.key();
      Array empty = c.createArrayOf("bigint", boxed(ConcurrencyRecord.EMPTY.toWords()));
      execute(c, create, Map.of("key", key, "empty", empty));
      ConcurrencyRecord stored = null;
      try (PreparedStatement ps = c.prepareStatement(lock.text)) {
        lock.bind(ps, Map.of("key", key));
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            throw new StoreException("concurrency limit '" + key + "': its row vanished inside the transaction");
          }
          Array rec = rs.getArray(1);
          int ver = rs.getInt(2);
          boolean verNull = rs.wasNull();
          boolean counter = rs.getBoolean(4);
          long exp = rs.getLong(5);
          boolean expNull = rs.wasNull();
          long at = now(c);
          if (counter) {
            if (expNull || exp > at) {
              throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
            } // else an expired counter: the limit replaces it
          } else if (rec != null && !verNull && ver != FORMAT) {
            throw new StoreException("'" + key + "' holds a rate limiter, not a concurrency limit; use another name");
          } else if (rec != null) {
            Long[] words = (Long[]) rec.getArray();
            long[] w = new long[words.length];
            for (int i = 0; i < w.length; i++) {
              w[i] = words[i];
            }
            stored = ConcurrencyRecord.fromWords(key, w);
          }
          ConcurrencyMachine.Outcome out = ConcurrencyMachine.apply(stored, at, call);
          if (out.changed() || counter) {
            execute(c, write, Map.of("key", key, "rec", c.createArrayOf("bigint", boxed(out.next().toWords())),
                "at", out.next().decidedAt()));
          }
          c.commit();
          committed = true;
          return out.result();
        }
      }
    } finally {
      TransactionEnd.end(c, committed);
    }
  }

  private long now(Connection c) throws SQLException {
    if (!serverClock) {
      return clock.nanos();
    }
    try (PreparedStatement ps = c.prepareStatement(now.text); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static void execute(Connection c, Sql sql, Map<String, Object> values) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.text)) {
      sql.bind(ps, values);
      ps.executeUpdate();
    }
  }

  private static Long[] boxed(long[] words) {
    Long[] b = new Long[words.length];
    for (int i = 0; i < b.length; i++) {
      b[i] = words[i];
    }
    return b;
  }
}
