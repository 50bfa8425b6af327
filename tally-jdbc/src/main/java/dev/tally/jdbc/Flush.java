package dev.tally.jdbc;

import dev.tally.Counters;
import dev.tally.NotAnIntegerException;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.spi.OperationId;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Moves counts from any store into the user's own table, exactly once, through the user's own
 * statement: a flusher killed at any instant and started again loses no count and applies none
 * twice.
 *
 * <pre>{@code
 * Flush flush = Flush.from(tally, "views:episode:")
 *     .into(dataSource, "UPDATE episodes SET views = views + :count WHERE id = :suffix::bigint")
 *     .build();
 * FlushResult r = flush.run();   // e.g. every minute, from one scheduled job
 * }</pre>
 *
 * <h2>Why pop, then UPDATE, is not enough</h2>
 *
 * A flusher that pops a count and dies before its UPDATE commits has deleted counts that never
 * reach the database; one that retries an UPDATE whose commit reply was lost adds them twice.
 * The database's transaction cannot include the source store, so the two steps need a protocol.
 *
 * <h2>The protocol</h2>
 *
 * A batch is a list of keys with an id. Each key's count leaves the source by a {@code pop} that
 * carries the operation id {@code <batch>:<i>}, {@code i} the key's place in the batch's recorded
 * list (keys may be longer than an id may be): the source applies a pop with a given id at most
 * once, and answers a repeat with the first pop's value, for as long as it retains the id
 * ({@link dev.tally.Counters#withOperationId}). So a pop can be redone after a crash and yields
 * the same count, not a second one.
 *
 * <ol>
 *   <li><b>Record.</b> The batch (id, prefix, keys) is inserted into the ledger and committed
 *       before anything is popped.
 *   <li><b>Pop.</b> Each key is popped with its operation id. An increment racing with the pop
 *       lands in the popped value or in a fresh counter, never nowhere.
 *   <li><b>Apply.</b> One database transaction runs the user's statement for every non-zero
 *       count and marks the batch applied in the ledger ({@code applied_at}, the counts). The
 *       commit is the single instant at which the batch takes effect.
 * </ol>
 *
 * Killed before 1 commits: nothing was popped. Killed during 2 or 3 (or with the commit's reply
 * lost): the ledger shows the batch unfinished or applied, and it is the truth. A starting
 * flusher first finishes every unfinished batch of its prefix by replaying all its pops with the
 * same ids (popped keys answer their first value, the others are popped now) and applying them.
 * Applied batches are never touched again.
 *
 * <h2>Durable commits</h2>
 *
 * The protocol relies on the ledger keeping what it acknowledged: a record (step 1) that a
 * database crash forgets after the pops emptied the source loses those counts, and an applied
 * batch it forgets is replayed and applied twice. With {@code synchronous_commit = off} (on the
 * server, the database or the role), PostgreSQL acknowledges a commit before its WAL is written
 * and forgets it in a crash. So both transactions of a batch set
 * {@code SET LOCAL synchronous_commit = on} whatever the defaults are; the rest of the session is
 * untouched.
 *
 * <h2>One flusher per prefix</h2>
 *
 * {@link #run} holds a PostgreSQL session advisory lock on (ledger, prefix) for its duration,
 * taken with {@code pg_try_advisory_lock}: a second flusher of the same prefix fails at once with
 * {@link FlushBusyException} and changes nothing. The lock belongs to the flusher's database
 * session, so a flusher killed with {@code kill -9} loses it as soon as the server sees its
 * connection close, and the next one can resume.
 *
 * <h2>Retention</h2>
 *
 * Replaying a pop is only safe while the source still remembers its id. The source's retention
 * window must exceed the longest time a batch may stay unfinished: the time a flusher may stay
 * down after a crash, plus one run. A flusher that finds an unfinished batch older than
 * {@link Builder#retention} refuses to replay it (its first pops could be forgotten, and their
 * counts lost) and says so; the default is Tally's default retention,
 * {@link OperationId#DEFAULT_RETENTION one hour}. Set both longer to survive longer outages.
 */
public final class Flush implements AutoCloseable {
  /** The advisory lock class of flushers: a constant, with the (ledger, prefix) hash as the object. */
  static final int LOCK_CLASS = 0x7a11;
  private static final Pattern NAMED = Pattern.compile("(?<![:\\w]):(count|key|suffix)\\b");

  private final Tally source;
  private final Counters counters;
  private final String prefix;
  private final DataSource target;
  private final Pool ownedPool;
  private final String statement;
  private final FlushStatement binder;
  private final String ledger;
  private final int batchSize;
  private final Duration retention;
  private final Listener listener;

  private Flush(Builder b) {
    this.source = b.source;
    this.counters = b.source.counters();
    this.prefix = b.prefix;
    this.target = b.target;
    this.ownedPool = b.ownedPool;
    this.statement = b.statement;
    this.binder = b.binder;
    this.ledger = b.ledger;
    this.batchSize = b.batchSize;
    this.retention = b.retention;
    this.listener = b.listener;
  }

  /** A flush of the counters under {@code prefix} (full keys, e.g. {@code views:episode:}) of {@code source}. */
  public static Builder from(Tally source, String prefix) {
    return new Builder(source, prefix);
  }

  /** What a flush does, step by step, for logs and metrics (every method does nothing by default). */
  public interface Listener {
    /** Step 1 done: the batch is in the ledger, nothing popped yet. */
    default void recorded(String batch, List<String> keys) {}

    /** Step 2, once per key: the key's pop (first or replayed) answered {@code count}. */
    default void popped(String batch, String key, long count) {}

    /** Step 3: the user's statements ran inside the transaction, which is about to commit. */
    default void applying(String batch) {}

    /** Step 3 done: the transaction committed; the batch is applied. */
    default void applied(String batch, long total) {}
  }

  /**
   * Finishes every unfinished batch of the prefix, then flushes every key now under it, in
   * batches.
   *
   * @throws FlushBusyException if another flusher holds the prefix
   * @throws StoreException if the source or the database fails; what was committed stays
   *     committed, and the next run finishes the rest
   */
  public FlushResult run() {
    try (Connection c = target.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true);
      }
      checkLedger(c);
      if (!tryLock(c)) {
        throw new FlushBusyException("another flusher is flushing '" + prefix + "' through ledger " + ledger
            + " (it holds the advisory lock); this one changed nothing");
      }
      try {
        return flush(c);
      } finally {
        unlock(c);
      }
    } catch (SQLException e) {
      throw new StoreException("flush of '" + prefix + "' into the database failed: " + e.getMessage()
          + "; committed batches stay applied, and the next run finishes the rest", e);
    }
  }

  private FlushResult flush(Connection c) throws SQLException {
    long[] totals = new long[3]; // keys, total, unmatched
    int resumed = 0;
    for (Batch b : unfinished(c)) {
      if (b.createdAt.plus(retention).isBefore(Instant.now())) {
        throw new StoreException("flush batch " + b.id + " of '" + prefix + "' was recorded at " + b.createdAt
            + ", longer ago than the retention of " + retention + ": the source may have forgotten the"
            + " operation ids of its pops, so replaying them could lose counts. Inspect the batch in " + ledger
            + " (its keys are listed there) before deleting its row");
      }
      finish(c, b, totals);
      resumed++;
    }
    int batches = 0;
    List<String> keys = counters.keys(prefix);
    for (int from = 0; from < keys.size(); from += batchSize) {
      Batch b = new Batch(UUID.randomUUID().toString(), keys.subList(from, Math.min(keys.size(), from + batchSize)),
          Instant.now());
      record(c, b);
      listener.recorded(b.id, b.keys);
      finish(c, b, totals);
      batches++;
    }
    return new FlushResult(resumed, batches, totals[0], totals[1], totals[2]);
  }

  /** Steps 2 and 3 of a recorded batch. */
  private void finish(Connection c, Batch b, long[] totals) throws SQLException {
    long[] counts = new long[b.keys.size()];
    for (int i = 0; i < counts.length; i++) {
      String key = b.keys.get(i);
      counts[i] = popOnce(key, b.id + ":" + i);
      listener.popped(b.id, key, counts[i]);
    }
    c.setAutoCommit(false);
    boolean committed = false;
    try {
      durableCommit(c);
      long keys = 0;
      long total = 0;
      long unmatched = 0;
      try (PreparedStatement mark = c.prepareStatement("UPDATE " + ledger
          + " SET applied_at = clock_timestamp(), counts = ?, total = ? WHERE batch = ? AND applied_at IS NULL")) {
        Long[] boxed = new Long[counts.length];
        java.math.BigDecimal sum = java.math.BigDecimal.ZERO;
        for (int i = 0; i < counts.length; i++) {
          boxed[i] = counts[i];
          sum = sum.add(java.math.BigDecimal.valueOf(counts[i]));
        }
        mark.setArray(1, c.createArrayOf("bigint", boxed));
        mark.setBigDecimal(2, sum);
        mark.setString(3, b.id);
        if (mark.executeUpdate() != 1) {
          throw new StoreException("flush batch " + b.id + " is not unfinished in " + ledger
              + " any more: something else applied or deleted it while this flusher held the lock");
        }
      }
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        List<Integer> sent = new ArrayList<>();
        for (int i = 0; i < counts.length; i++) {
          if (counts[i] != 0) {
            binder.bind(ps, b.keys.get(i), counts[i]);
            ps.addBatch();
            sent.add(i);
            keys++;
            total += counts[i];
          }
        }
        if (!sent.isEmpty()) {
          for (int changed : ps.executeBatch()) {
            if (changed == 0) {
              unmatched++;
            }
          }
        }
      }
      listener.applying(b.id);
      c.commit();
      committed = true;
      totals[0] += keys;
      totals[1] += total;
      totals[2] += unmatched;
      listener.applied(b.id, total);
    } finally {
      TransactionEnd.end(c, committed);
    }
  }

  /**
   * The count of {@code key} moved out of the source by a pop carrying {@code id}: popped now the
   * first time, the first pop's value on a replay. A floating counter cannot be flushed as an
   * integer count: it stays in place and counts 0.
   */
  private long popOnce(String key, String id) {
    try {
      return counters.withOperationId(id).pop(key).orElse(0);
    } catch (NotAnIntegerException e) {
      return 0;
    }
  }

  private void record(Connection c, Batch b) throws SQLException {
    c.setAutoCommit(false);
    boolean committed = false;
    try {
      durableCommit(c);
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + ledger + " (batch, prefix, keys) VALUES (?, ?, ?)")) {
        ps.setString(1, b.id);
        ps.setString(2, prefix);
        ps.setArray(3, c.createArrayOf("text", b.keys.toArray()));
        ps.executeUpdate();
      }
      c.commit();
      committed = true;
    } finally {
      TransactionEnd.end(c, committed);
    }
  }

  /**
   * Makes the open transaction's commit wait for its WAL to be written, whatever
   * {@code synchronous_commit} the server, database or role has (see "Durable commits" above).
   */
  private static void durableCommit(Connection c) throws SQLException {
    try (java.sql.Statement s = c.createStatement()) {
      s.execute("SET LOCAL synchronous_commit = on");
    }
  }

  private List<Batch> unfinished(Connection c) throws SQLException {
    List<Batch> out = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement("SELECT batch, keys, created_at FROM " + ledger
        + " WHERE prefix = ? AND applied_at IS NULL ORDER BY created_at, batch")) {
      ps.setString(1, prefix);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          Array keys = rs.getArray(2);
          out.add(new Batch(rs.getString(1), List.of((String[]) keys.getArray()),
              rs.getTimestamp(3).toInstant()));
        }
      }
    }
    return out;
  }

  private boolean tryLock(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?, hashtext(?))")) {
      ps.setInt(1, LOCK_CLASS);
      ps.setString(2, ledger + ":" + prefix);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getBoolean(1);
      }
    }
  }

  private void unlock(Connection c) {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?, hashtext(?))")) {
      ps.setInt(1, LOCK_CLASS);
      ps.setString(2, ledger + ":" + prefix);
      ps.executeQuery().close();
    } catch (SQLException e) {
      // the session is gone, and its lock with it
    }
  }

  private void checkLedger(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
      ps.setString(1, ledger);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        if (!rs.getBoolean(1)) {
          throw new StoreException("the flush ledger table " + ledger + " does not exist in the target database;"
              + " create it with `tally schema --ledger " + ledger + " --into <uri> --apply`, or run the DDL that"
              + " prints (dev/tally/jdbc/flush-ledger.sql)");
        }
      }
    }
  }

  /** Closes the pool this flush opened for a target URI (a given DataSource stays open). */
  @Override
  public void close() {
    if (ownedPool != null) {
      ownedPool.close();
    }
  }

  @Override
  public String toString() {
    return "Flush[" + prefix + " from " + source.uri() + " via " + ledger + "]";
  }

  private record Batch(String id, List<String> keys, Instant createdAt) {}

  /** Settings of a {@link Flush}. */
  public static final class Builder {
    private final Tally source;
    private final String prefix;
    private DataSource target;
    private Pool ownedPool;
    private String statement;
    private FlushStatement binder;
    private String ledger = "tally_flush";
    private int batchSize = 1000;
    private Duration retention = OperationId.DEFAULT_RETENTION;
    private Listener listener = new Listener() {};

    private Builder(Tally source, String prefix) {
      this.source = Objects.requireNonNull(source, "source");
      this.prefix = Objects.requireNonNull(prefix, "prefix");
    }

    /**
     * The target database and the statement each count goes through, with named parameters
     * {@code :count} (the count, a bigint), {@code :key} (the full key) and {@code :suffix} (the
     * key without the prefix), e.g.
     * {@code UPDATE episodes SET views = views + :count WHERE id = :suffix::bigint}.
     */
    public Builder into(DataSource dataSource, String sql) {
      List<String> order = new ArrayList<>();
      Matcher m = NAMED.matcher(sql);
      StringBuilder jdbc = new StringBuilder();
      while (m.find()) {
        order.add(m.group(1));
        m.appendReplacement(jdbc, "?");
      }
      m.appendTail(jdbc);
      if (!order.contains("count")) {
        throw new IllegalArgumentException("the flush statement must use :count, e.g."
            + " UPDATE episodes SET views = views + :count WHERE id = :suffix::bigint");
      }
      String plen = prefix;
      return into(dataSource, jdbc.toString(), (ps, key, count) -> {
        for (int i = 0; i < order.size(); i++) {
          switch (order.get(i)) {
            case "count" -> ps.setLong(i + 1, count);
            case "key" -> ps.setString(i + 1, key);
            default -> ps.setString(i + 1, key.substring(plen.length()));
          }
        }
      });
    }

    /** The target database and a JDBC statement with {@code ?} parameters that {@code binder} sets. */
    public Builder into(DataSource dataSource, String sql, FlushStatement binder) {
      this.target = Objects.requireNonNull(dataSource, "dataSource");
      this.statement = Objects.requireNonNull(sql, "sql");
      this.binder = Objects.requireNonNull(binder, "binder");
      return this;
    }

    /** The target database by URI ({@code postgresql://user@host/db}); the flush opens a pool. */
    public Builder into(String uri, String sql) {
      PostgresSettings s = PostgresSettings.parse(uri);
      this.ownedPool = Pool.open(s);
      try {
        return into(ownedPool.dataSource(), sql);
      } catch (RuntimeException e) {
        ownedPool.close(); // a statement refused here leaves no pool behind: build() is never reached
        ownedPool = null;
        throw e;
      }
    }

    /** The ledger table (default {@code tally_flush}), created from {@link PostgresSchema#ledgerDdl}. */
    public Builder ledger(String table) {
      this.ledger = PostgresSettings.table(table);
      return this;
    }

    /** Keys per batch (default 1000): one ledger row and one database transaction each. */
    public Builder batchSize(int keys) {
      if (keys < 1 || keys > 100_000) {
        throw new IllegalArgumentException("batch size must be 1 to 100000 keys, not " + keys);
      }
      this.batchSize = keys;
      return this;
    }

    /**
     * The source's operation-id retention ({@link Tally.Builder#operationRetention}; default one
     * hour): unfinished batches older than this are refused rather than replayed.
     */
    public Builder retention(Duration retention) {
      if (retention.isNegative() || retention.isZero()) {
        throw new IllegalArgumentException("retention must be positive, e.g. 24h");
      }
      this.retention = retention;
      return this;
    }

    /** Receives each step, e.g. to log or count them. */
    public Builder listener(Listener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    public Flush build() {
      if (target == null) {
        throw new IllegalStateException("a flush needs a target: call into(dataSource, sql)");
      }
      return new Flush(this);
    }
  }
}
