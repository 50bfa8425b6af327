package dev.tally.jdbc;

import dev.tally.Durations;
import dev.tally.Decision;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.TimeSource;
import dev.tally.spi.CounterMath;
import dev.tally.spi.LimiterArguments;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterRecord;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.OperationRecord;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.TxOp;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;

/**
 * The {@code postgresql:} store: counters and rate limiters as rows of one table (see
 * {@code schema.sql} and docs/postgresql.md).
 *
 * <p>Every counter operation is one statement on one row ({@link Statements}), so PostgreSQL's
 * row lock makes it atomic and its commit makes it durable; a statement that cannot decide
 * alone (a live limiter in the way, a floating counter for an integer operation) writes nothing
 * and the store reads the row to say why. A rate limiter call is one call of the schema's
 * {@code <table>_limit} function, which locks the row, reads the clock and runs the limiter's
 * state machine in PL/pgSQL; rate limiter calls that wait at the same time are decided together, by
 * one call of {@code <table>_limit_batch} ({@link LimiterBatches}). A transaction is one database
 * transaction.
 *
 * <p>Clock: expiry runs on the database's {@code statement_timestamp()} (see {@link Sql}) and limiters
 * on its {@code clock_timestamp()}, read once the row is locked, so hosts with
 * skewed clocks agree, unless the user supplied a clock ({@link StoreContext#timeSourceOverridden()}),
 * which every statement then receives as a parameter.
 */
final class PostgresStore implements Store {
  private static final int TRIES = 4;
  private static final int SWEEP_BATCH = 1000;

  private final PostgresSettings settings;
  private final Pool pool;
  private final DataSource ds;
  private final boolean serverClock;
  private final TimeSource clock;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final ScheduledExecutorService sweeper;

  private final Sql incr;
  private final Sql incrExisting;
  private final Sql incrDouble;
  private final Sql lockRow;
  private final Sql setIval;
  private final Sql resetIval;
  private final Sql insertIval;
  private final Sql incrDoubleExisting;
  private final Sql get;
  private final Sql put;
  private final Sql add;
  private final Sql pop;
  private final Sql popInteger;
  private final Sql delete;
  private final Sql touch;
  private final Sql ttl;
  private final Sql keys;
  private final Sql diagnose;
  private final Sql lockKeys;
  private final Sql limit;
  private final Sql limitAll;
  private final Sql plainLimit;
  private final Sql batchLimit;
  private final LimiterBatches<Pending> batches; // null: limiterBatch=off
  private final Sql sweep;
  private final Sql sweepOps;
  private final Sql claimId;
  private final Sql readId;
  private final Sql recordId;
  private final long retentionNanos;
  private final PostgresConcurrency concurrency;

  private PostgresStore(PostgresSettings settings, Pool pool, StoreContext context) {
    this.settings = settings;
    this.pool = pool;
    this.ds = pool.dataSource();
    this.serverClock = !context.timeSourceOverridden();
    this.clock = context.timeSource();
    String t = settings.table;
    this.incr = Sql.of(Statements.INCR, t, serverClock);
    this.incrExisting = Sql.of(Statements.INCR_EXISTING, t, serverClock);
    this.incrDouble = Sql.of(Statements.INCR_DOUBLE, t, serverClock);
    this.lockRow = Sql.of(Statements.LOCK_ROW, t, serverClock);
    this.setIval = Sql.of(Statements.SET_IVAL, t, serverClock);
    this.resetIval = Sql.of(Statements.RESET_IVAL, t, serverClock);
    this.insertIval = Sql.of(Statements.INSERT_IVAL, t, serverClock);
    this.incrDoubleExisting = Sql.of(Statements.INCR_DOUBLE_EXISTING, t, serverClock);
    this.get = Sql.of(Statements.GET, t, serverClock);
    this.put = Sql.of(Statements.PUT, t, serverClock);
    this.add = Sql.of(Statements.ADD, t, serverClock);
    this.pop = Sql.of(Statements.POP, t, serverClock);
    this.popInteger = Sql.of(Statements.POP_INTEGER, t, serverClock);
    this.delete = Sql.of(Statements.DELETE, t, serverClock);
    this.touch = Sql.of(Statements.TOUCH, t, serverClock);
    this.ttl = Sql.of(Statements.TTL, t, serverClock);
    this.keys = Sql.of(Statements.KEYS, t, serverClock);
    this.diagnose = Sql.of(Statements.DIAGNOSE, t, serverClock);
    this.lockKeys = Sql.of(Statements.LOCK_KEYS, t, serverClock);
    this.limit = Sql.of(Statements.LIMIT, t, serverClock);
    // A decision with an operation id commits with its id record, as the server's setting says.
    this.plainLimit = settings.limiterCommitAsync ? Sql.of(Statements.LIMIT_ASYNC_COMMIT, t, serverClock) : limit;
    this.batchLimit = Sql.of(settings.limiterCommitAsync ? Statements.LIMIT_BATCH_ASYNC_COMMIT : Statements.LIMIT_BATCH,
        t, serverClock);
    this.batches = settings.limiterBatches == 0 ? null : new LimiterBatches<>(settings.limiterBatches, this::decide);
    this.limitAll = Sql.of(Statements.LIMIT_ALL, t, serverClock);
    this.sweep = Sql.of(Statements.SWEEP, t, serverClock);
    this.sweepOps = Sql.of(Statements.SWEEP_OPS, t, serverClock);
    this.claimId = Sql.of(Statements.CLAIM_ID, t, serverClock);
    this.readId = Sql.of(Statements.READ_ID, t, serverClock);
    this.recordId = Sql.of(Statements.RECORD_ID, t, serverClock);
    this.retentionNanos = context.operationRetentionNanos();
    this.concurrency = new PostgresConcurrency(t, serverClock, clock);
    if (settings.sweep.isZero()) {
      this.sweeper = null;
    } else {
      this.sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread th = new Thread(r, "tally-postgresql-sweep");
        th.setDaemon(true);
        return th;
      });
      long ms = settings.sweep.toMillis();
      sweeper.scheduleWithFixedDelay(this::sweepQuietly, ms, ms, TimeUnit.MILLISECONDS);
    }
  }

  /** Opens a store; fails if the schema is missing, naming the command that creates it. */
  static PostgresStore open(PostgresSettings settings, StoreContext context) {
    Pool pool = Pool.open(settings);
    try (Pool.Lease lease = pool.lease(Deadline.start(settings))) {
      PostgresSchema.check(lease.connection, settings.table, settings.describe, settings.limiterBatches > 0);
    } catch (SQLException e) {
      pool.close();
      throw Failures.translate(e, "opening the store", settings.describe);
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
    return new PostgresStore(settings, pool, context);
  }

  // ------------------------------------------------------------------ plumbing

  @FunctionalInterface
  interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  @FunctionalInterface
  interface RowReader<T> {
    T read(ResultSet rs) throws SQLException;
  }

  /** Runs {@code work} on a connection leased until the call's {@link Deadline}. */
  private <T> T run(String what, Work<T> work) {
    if (closed.get()) {
      throw new StoreUnavailableException("the store " + settings.describe + " is closed", null);
    }
    try (Pool.Lease lease = pool.lease(Deadline.start(settings))) {
      return work.run(lease.connection);
    } catch (SQLException e) {
      throw Failures.translate(e, what, settings.describe);
    }
  }

  /** Named values; {@code now} is added on a supplied clock. */
  private Map<String, Object> values(Object... pairs) {
    Map<String, Object> v = new HashMap<>(pairs.length);
    for (int i = 0; i < pairs.length; i += 2) {
      v.put((String) pairs[i], pairs[i + 1]);
    }
    if (!serverClock) {
      v.put("now", clock.nanos());
    }
    return v;
  }

  /** The first row of {@code sql}, read by {@code reader}, or null if there is none. */
  private static <T> T one(Connection c, Sql sql, Map<String, Object> values, RowReader<T> reader)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.text)) {
      bind(c, ps, sql, values);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? reader.read(rs) : null;
      }
    }
  }

  private static void bind(Connection c, PreparedStatement ps, Sql sql, Map<String, Object> values)
      throws SQLException {
    Map<String, Object> v = values;
    for (Map.Entry<String, Object> e : values.entrySet()) {
      Object value = e.getValue();
      if (value instanceof Long[] || value instanceof String[]) {
        if (v == values) {
          v = new HashMap<>(values);
        }
        Array a = c.createArrayOf(value instanceof Long[] ? "bigint" : "text", (Object[]) value);
        v.put(e.getKey(), a);
      }
    }
    sql.bind(ps, v);
  }

  private static Long longOrNull(ResultSet rs, int column) throws SQLException {
    long v = rs.getLong(column);
    return rs.wasNull() ? null : v;
  }

  private static Number number(ResultSet rs) throws SQLException {
    Long i = longOrNull(rs, 1);
    if (i != null) {
      return i;
    }
    double d = rs.getDouble(2);
    return rs.wasNull() ? null : d;
  }

  /** What the row of {@code key} holds, for a write that could not change it. */
  private enum Found { NOTHING, INTEGER, FLOATING, LIMITER }

  private Found diagnose(Connection c, String key) throws SQLException {
    Found f = one(c, diagnose, values("key", key), rs -> {
      if (!rs.getBoolean(4)) {
        return Found.NOTHING; // expired, of either kind
      }
      return rs.getBoolean(1) ? Found.INTEGER : rs.getBoolean(2) ? Found.FLOATING : Found.LIMITER;
    });
    return f == null ? Found.NOTHING : f;
  }

  private StoreException keptChanging(String key) {
    return new StoreException("the row of '" + key + "' in " + settings.describe + " changed kind "
        + TRIES + " times during one operation");
  }

  // ------------------------------------------------------------------ counters

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    return run("incr of '" + key + "'", c -> incr(c, key, delta, dflt, create));
  }

  private long incr(Connection c, String key, long delta, long dflt, boolean create) throws SQLException {
    long created = dflt + delta;
    boolean fits = ((dflt ^ created) & (delta ^ created)) >= 0;
    for (int attempt = 0; attempt < TRIES; attempt++) {
      Long v;
      try {
        // A live counter's increment is one UPDATE, as cheap as a hand-written one; only a key
        // that is missing, expired or a tombstone goes on to the INSERT ... ON CONFLICT, whose
        // speculative path costs about twice as much on the server.
        v = one(c, incrExisting, values("key", key, "delta", delta), rs -> rs.getLong(1));
        if (v == null && create && fits) {
          v = one(c, incr, values("key", key, "created", created, "delta", delta), rs -> rs.getLong(1));
        }
      } catch (SQLException e) {
        if (Failures.isOverflow(e)) {
          throw Failures.overflow(key, delta);
        }
        throw e;
      }
      if (v != null) {
        return v;
      }
      switch (diagnose(c, key)) {
        case LIMITER:
          throw Failures.limiterHere(key);
        case FLOATING:
          throw new NotAnIntegerException(key);
        case NOTHING:
          if (!create) {
            throw new KeyNotFoundException(key);
          }
          if (!fits) {
            throw Failures.overflow(key, dflt + " + " + delta);
          }
          break; // deleted meanwhile: again
        default:
          break; // an integer again: again
      }
    }
    throw keptChanging(key);
  }

  /**
   * A bounded increment inside a transaction: the row is locked ({@link Statements#LOCK_ROW}),
   * so the rule is {@link CounterMath#addWithin}'s own, decided here, and a plain increment of the
   * key waits for the commit. A key with no row may be created by another writer between the
   * look and the insert; then the row is looked at again.
   */
  private long incrWithin(Connection c, TxOp.Incr i) throws SQLException {
    String key = i.key();
    for (int attempt = 0; attempt < TRIES; attempt++) {
      Object[] row = one(c, lockRow, values("key", key), rs -> new Object[] {
          rs.getObject(1) == null ? null : rs.getLong(1), rs.getBoolean(2), rs.getBoolean(3), rs.getBoolean(4)});
      boolean free = row == null || (Boolean) row[2];
      if (free) {
        if (!i.create()) {
          throw new KeyNotFoundException(key);
        }
        long next = CounterMath.addWithin(key, i.dflt(), i.delta(), i.bounds());
        if (row != null) {
          one(c, resetIval, values("key", key, "value", next), rs -> 1);
          return next;
        }
        if (one(c, insertIval, values("key", key, "value", next), rs -> rs.getLong(1)) != null) {
          return next;
        }
        continue;
      }
      if ((Boolean) row[3]) {
        throw Failures.limiterHere(key);
      }
      if (row[0] == null || (Boolean) row[1]) {
        throw new NotAnIntegerException(key);
      }
      long next = CounterMath.addWithin(key, (Long) row[0], i.delta(), i.bounds());
      one(c, setIval, values("key", key, "value", next), rs -> 1);
      return next;
    }
    throw keptChanging(key);
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    return run("incr of '" + key + "'", c -> incrDouble(c, key, delta, dflt));
  }

  private double incrDouble(Connection c, String key, double delta, double dflt) throws SQLException {
    double created = dflt + delta;
    boolean fits = Double.isFinite(created);
    for (int attempt = 0; attempt < TRIES; attempt++) {
      Double v;
      try {
        v = fits
            ? one(c, incrDouble, values("key", key, "created", created, "delta", delta), rs -> rs.getDouble(1))
            : one(c, incrDoubleExisting, values("key", key, "delta", delta), rs -> rs.getDouble(1));
      } catch (SQLException e) {
        if (Failures.isOverflow(e)) {
          throw Failures.overflow(key, delta);
        }
        throw e;
      }
      if (v != null) {
        return v;
      }
      Found f = diagnose(c, key);
      if (f == Found.LIMITER) {
        throw Failures.limiterHere(key);
      }
      if (f == Found.NOTHING && !fits) {
        throw Failures.overflow(key, dflt + " + " + delta);
      }
    }
    throw keptChanging(key);
  }

  @Override
  public Number get(String key) {
    return run("get of '" + key + "'", c -> get(c, key));
  }

  private Number get(Connection c, String key) throws SQLException {
    return one(c, get, values("key", key), rs -> {
      if (rs.getBoolean(4)) {
        throw Failures.limiterHere(key);
      }
      return number(rs);
    });
  }

  /**
   * {@code absent}, the answer of a counter write that found no live counter, unless the name
   * is a live limiter's: then, as for every counter operation, the name is refused.
   */
  private <T> T missing(Connection c, String key, T absent) throws SQLException {
    if (diagnose(c, key) == Found.LIMITER) {
      throw Failures.limiterHere(key);
    }
    return absent;
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    run("put of '" + key + "'", c -> put(c, key, value, ttlNanos));
  }

  private Number put(Connection c, String key, Number value, long ttlNanos) throws SQLException {
    Map<String, Object> v = values("key", key, "ttl", ttlNanos,
        "ival", value instanceof Double ? null : value.longValue(),
        "fval", value instanceof Double ? value : null);
    if (one(c, put, v, rs -> rs.getInt(1)) == null) {
      throw Failures.limiterHere(key);
    }
    return value;
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return run("add of '" + key + "'", c -> add(c, key, value, ttlNanos));
  }

  private boolean add(Connection c, String key, Number value, long ttlNanos) throws SQLException {
    Map<String, Object> v = values("key", key, "ttl", ttlNanos,
        "ival", value instanceof Double ? null : value.longValue(),
        "fval", value instanceof Double ? value : null);
    if (one(c, add, v, rs -> rs.getInt(1)) != null) {
      return true;
    }
    if (diagnose(c, key) == Found.LIMITER) {
      throw Failures.limiterHere(key);
    }
    return false;
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    return run("pop of '" + key + "'", c -> pop(c, key, integerOnly));
  }

  private Number pop(Connection c, String key, boolean integerOnly) throws SQLException {
    if (!integerOnly) {
      Number v = one(c, pop, values("key", key), PostgresStore::number);
      return v != null ? v : missing(c, key, null);
    }
    Long v = one(c, popInteger, values("key", key), rs -> rs.getLong(1));
    if (v == null) {
      switch (diagnose(c, key)) {
        case FLOATING:
          throw new NotAnIntegerException(key);
        case LIMITER:
          throw Failures.limiterHere(key);
        default:
          break;
      }
    }
    return v;
  }

  @Override
  public boolean delete(String key) {
    return run("delete of '" + key + "'", c -> delete(c, key));
  }

  private boolean delete(Connection c, String key) throws SQLException {
    Boolean live = one(c, delete, values("key", key), rs -> rs.getBoolean(1));
    return live != null ? live : missing(c, key, false);
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    return run("touch of '" + key + "'", c -> touch(c, key, ttlNanos));
  }

  private boolean touch(Connection c, String key, long ttlNanos) throws SQLException {
    return one(c, touch, values("key", key, "ttl", ttlNanos), rs -> rs.getInt(1)) != null || missing(c, key, false);
  }

  @Override
  public long ttl(String key) {
    return run("ttl of '" + key + "'", c -> {
      long[] left = one(c, ttl, values("key", key), rs -> {
        if (rs.getBoolean(2)) {
          throw Failures.limiterHere(key);
        }
        long v = rs.getLong(1);
        return new long[] {rs.wasNull() ? TTL_PERMANENT : v};
      });
      return left == null ? TTL_MISSING : left[0];
    });
  }

  @Override
  public List<String> keys(String prefix) {
    String pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%";
    return run("keys under '" + prefix + "'", c -> {
      List<String> out = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement(keys.text)) {
        bind(c, ps, keys, values("pattern", pattern));
        ps.setFetchSize(1000);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            out.add(rs.getString(1));
          }
        }
      }
      return out;
    });
  }

  // ------------------------------------------------------------------ transactions

  /**
   * One database transaction: advisory locks on every key first ({@link Statements#LOCK_KEYS}),
   * then each operation's own statement, then the commit. Any failure rolls everything back.
   */
  @Override
  public Number[] transact(List<TxOp> ops) {
    return run("transaction on " + ops.size() + " keys", c -> inTransaction(c, () -> transactIn(c, ops)));
  }

  /** The operations of a transaction, on {@code c}, whose database transaction is open. */
  private Number[] transactIn(Connection c, List<TxOp> ops) throws SQLException {
    String[] keyList = ops.stream().map(TxOp::key).distinct().toArray(String[]::new);
    one(c, lockKeys, values("keys", keyList), rs -> rs.getLong(1));
    Number[] results = new Number[ops.size()];
    for (int i = 0; i < ops.size(); i++) {
      results[i] = apply(c, ops.get(i));
    }
    return results;
  }

  @FunctionalInterface
  private interface Body<T> {
    T run() throws SQLException;
  }

  /** Runs {@code body} as one database transaction on {@code c}: committed if it returns, else rolled back. */
  private static <T> T inTransaction(Connection c, Body<T> body) throws SQLException {
    c.setAutoCommit(false);
    boolean committed = false;
    try {
      T result = body.run();
      c.commit();
      committed = true;
      return result;
    } finally {
      TransactionEnd.end(c, committed);
    }
  }

  // ------------------------------------------------------------------ operation ids

  /**
   * One database transaction: claim the id in {@code <table>_ops} ({@link Statements#CLAIM_ID}),
   * apply the mutation with its own statement, record its result beside the id, commit. The id
   * and the mutation commit together or not at all, so no crash or lost reply can separate them.
   * A concurrent call with the same id waits on the claimed row until the first commits, then
   * replays its record; if the first rolled back (it failed), the second claims and applies.
   */
  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return run("operation " + id.value() + " on '" + mutation.key() + "'", c -> inTransaction(c, () -> {
      Map<String, Object> v = values("id", id.value(), "retention", retentionNanos);
      if (one(c, claimId, v, rs -> rs.getInt(1)) == null) {
        String text = one(c, readId, values("id", id.value()), rs -> rs.getString(1));
        if (text != null && !text.isEmpty()) {
          return OperationRecord.decode(text).replay(id, mutation);
        }
        throw new StoreException("operation id " + id.value() + " is claimed in " + settings.describe
            + " without a result; retry");
      }
      Object result = applyIn(c, mutation);
      Map<String, Object> r = values("id", id.value(), "record", OperationRecord.of(mutation, result).encode());
      try (PreparedStatement ps = c.prepareStatement(recordId.text)) {
        bind(c, ps, recordId, r);
        ps.executeUpdate();
      }
      return result;
    }));
  }

  /** {@code mutation} on {@code c}, inside the caller's database transaction. */
  private Object applyIn(Connection c, Mutation m) throws SQLException {
    if (m instanceof Mutation.Incr i) {
      return incr(c, i.key(), i.delta(), i.dflt(), i.create());
    } else if (m instanceof Mutation.IncrDouble d) {
      return incrDouble(c, d.key(), d.delta(), d.dflt());
    } else if (m instanceof Mutation.Put p) {
      put(c, p.key(), p.value(), p.ttlNanos());
      return null;
    } else if (m instanceof Mutation.Add a) {
      return add(c, a.key(), a.value(), a.ttlNanos());
    } else if (m instanceof Mutation.Pop p) {
      return pop(c, p.key(), p.integerOnly());
    } else if (m instanceof Mutation.Delete d) {
      return delete(c, d.key());
    } else if (m instanceof Mutation.Touch t) {
      return touch(c, t.key(), t.ttlNanos());
    } else if (m instanceof Mutation.Transact t) {
      return transactIn(c, t.ops());
    } else if (m instanceof Mutation.LimiterStep l) {
      long clientNow = clock.nanos();
      return limit(c, limit, l.call(), l.operation(), l.permits(), clientNow, clientNow, false);
    }
    throw new IllegalArgumentException("unknown mutation " + m);
  }

  private Number apply(Connection c, TxOp op) throws SQLException {
    if (op instanceof TxOp.Incr i && i.bounds() != null) {
      return incrWithin(c, i);
    } else if (op instanceof TxOp.Incr i) {
      return incr(c, i.key(), i.delta(), i.dflt(), i.create());
    } else if (op instanceof TxOp.IncrDouble d) {
      return incrDouble(c, d.key(), d.delta(), d.dflt());
    } else if (op instanceof TxOp.Put p) {
      return put(c, p.key(), p.value(), p.ttlNanos());
    } else if (op instanceof TxOp.Delete d) {
      return delete(c, d.key()) ? 1L : 0L;
    } else if (op instanceof TxOp.Get g) {
      return get(c, g.key());
    }
    throw new IllegalArgumentException("unknown transaction operation " + op);
  }

  // ------------------------------------------------------------------ rate limiters

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    long clientNow = clock.nanos();
    if (batches == null) {
      return run("rate limiter '" + call.key() + "'",
          c -> limit(c, plainLimit, call, operation, permits, clientNow, clientNow, false));
    }
    if (closed.get()) {
      throw new StoreUnavailableException("the store " + settings.describe + " is closed", null);
    }
    Deadline deadline = Deadline.start(settings);
    Pending p = new Pending(call, operation, permits, clientNow, deadline);
    switch (batches.submit(p)) {
      case NOT_SENT:
        throw new StoreUnavailableException("rate limiter '" + call.key() + "' in " + settings.describe
            + " waited its timeout of " + Durations.format(settings.timeout) + " for a batch to carry it (the server is slow"
            + " or unreachable); nothing was sent", null);
      case IN_FLIGHT:
        throw new StoreTimeoutException("rate limiter '" + call.key() + "' in " + settings.describe
            + " got no answer within its timeout of " + Durations.format(settings.timeout) + ": the batch carrying it was sent,"
            + " so it may or may not have been applied", null);
      default:
        break;
    }
    if (p.failure != null) {
      throw p.failure;
    }
    if (p.refusal == null) {
      return p.decision;
    }
    if (p.refusal.startsWith(CLOCK_SKEW)) {
      // as on the path alone: once more, with boundaries around the instant the database named
      long around = skewInstant(p.refusal);
      return run("rate limiter '" + call.key() + "'",
          c -> limit(c, plainLimit, call, operation, permits, clientNow, around, true));
    }
    throw limiterFailure(call.key(), p.refusal, null);
  }

  /** One step of a concurrency limit, in one database transaction: see {@link PostgresConcurrency}. */
  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    return run("concurrency limit '" + call.key() + "'", c -> concurrency.step(c, call));
  }

  /**
   * A joint decision: one call of {@code <table>_limit_all}, one transaction, its rows locked in
   * key order (the calls are sent sorted, as batches are, so no two wait on each other in a
   * cycle). With the quota boundaries' retry of a single call when the database's clock is far
   * from this host's.
   */
  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    long clientNow = clock.nanos();
    Integer[] order = new Integer[calls.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparing(i -> calls.get(i).key()));
    return run("the joint decision of rate limiter '" + calls.get(order[0]).key() + "' and "
        + (calls.size() - 1) + " more", c -> limitAll(c, calls, order, permitsEach, clientNow));
  }

  private Decision[] limitAll(Connection c, List<LimiterCall> calls, Integer[] order, long permits,
      long clientNow) throws SQLException {
    long around = clientNow;
    for (boolean again = false; ; again = true) {
      int n = order.length;
      String[] keys = new String[n];
      Long[] mineAt = new Long[n + 1];
      Long[] zonesAt = new Long[n + 1];
      List<Long> mine = new ArrayList<>(3 * n);
      List<Long> zones = new ArrayList<>();
      for (int j = 0; j < n; j++) {
        LimiterCall call = calls.get(order[j]);
        keys[j] = call.key();
        mineAt[j] = (long) mine.size() + 1;
        zonesAt[j] = (long) zones.size() + 1;
        mine.addAll(Arrays.asList(SqlLimiterArguments.limits(call)));
        Long[] z = SqlLimiterArguments.zones(call, around);
        if (z != null) {
          zones.addAll(Arrays.asList(z));
        }
      }
      mineAt[n] = (long) mine.size() + 1;
      zonesAt[n] = (long) zones.size() + 1;
      Map<String, Object> v = values("keys", keys, "permits", permits, "clock", serverClock ? null : clientNow,
          "mine", mine.toArray(new Long[0]), "mineAt", mineAt, "zones", zones.toArray(new Long[0]),
          "zonesAt", zonesAt);
      Decision[] out = new Decision[n];
      try (PreparedStatement ps = c.prepareStatement(limitAll.text)) {
        bind(c, ps, limitAll, v);
        try (ResultSet rs = ps.executeQuery()) {
          for (int j = 0; j < n; j++) {
            if (!rs.next()) {
              throw new StoreException("the joint decision of " + n + " limiters in " + settings.describe
                  + " answered fewer rows than limiters");
            }
            out[order[j]] = decision(rs.getArray(1));
          }
        }
        return out;
      } catch (SQLException e) {
        if ("42883".equals(e.getSQLState())) { // undefined_function
          throw new StoreException("the Tally schema of the PostgreSQL store " + settings.describe + " predates "
              + settings.table + "_limit_all, which joint limiter decisions need; apply the schema again"
              + " (`tally schema --store <uri> --apply`; re-running it is harmless)", e);
        }
        String m = e.getMessage() == null ? "" : e.getMessage();
        int at = m.indexOf("TALLY_");
        if (at < 0) {
          throw e;
        }
        String code = m.substring(at);
        String key = keys[0];
        if (code.startsWith(JOINT_AT)) { // "TALLY_AT <j> <code>": the refusal of the j-th key (from 1)
          String[] parts = code.substring(JOINT_AT.length()).split(" ", 2);
          key = keys[Integer.parseInt(parts[0]) - 1];
          code = parts.length > 1 ? parts[1] : "";
        }
        if (code.startsWith(CLOCK_SKEW) && !again) {
          around = skewInstant(code);
          continue;
        }
        throw limiterFailure(key, code, e);
      }
    }
  }

  private static final String JOINT_AT = "TALLY_AT ";

  private static final String CLOCK_SKEW = "TALLY_CLOCK_SKEW ";

  private static long skewInstant(String code) {
    return Long.parseLong(code.substring(CLOCK_SKEW.length()).trim().split("\\s", -1)[0]);
  }

  /**
   * One call, alone in its statement: zones around {@code around}; {@code retried} if they were
   * already moved once for a clock skew.
   */
  private Decision limit(Connection c, Sql statement, LimiterCall call, LimiterOperation operation, long permits,
      long clientNow, long around, boolean retried) throws SQLException {
    for (boolean again = retried; ; again = true) {
      Map<String, Object> v = values("key", call.key(), "op", LimiterArguments.operation(operation),
          "permits", permits, "clock", serverClock ? null : clientNow,
          "mine", SqlLimiterArguments.limits(call), "zones", SqlLimiterArguments.zones(call, around));
      try {
        return one(c, statement, v, rs -> decision(rs.getArray(1)));
      } catch (SQLException e) {
        String m = e.getMessage() == null ? "" : e.getMessage();
        int at = m.indexOf("TALLY_");
        if (at < 0) {
          throw e;
        }
        String code = m.substring(at);
        if (code.startsWith(CLOCK_SKEW) && !again) {
          // the database decided a quota at an instant the boundaries sent did not cover
          around = skewInstant(code);
          continue;
        }
        throw limiterFailure(call.key(), code, e);
      }
    }
  }

  /** A limiter call waiting in {@link #batches}; the leader that runs it sets one of the answers. */
  private static final class Pending extends LimiterBatches.Waiter {
    final LimiterCall call;
    final LimiterOperation operation;
    final long permits;
    final long clientNow;
    final Deadline deadline;
    Decision decision;
    String refusal; // the step's TALLY_ code
    RuntimeException failure;

    Pending(LimiterCall call, LimiterOperation operation, long permits, long clientNow, Deadline deadline) {
      super(deadline.answerByNanos());
      this.call = call;
      this.operation = operation;
      this.permits = permits;
      this.clientNow = clientNow;
      this.deadline = deadline;
    }
  }

  /**
   * Decides {@code batch} in one statement. Sorted by key (stably: two calls on one key keep their
   * order), so every batch locks its rows in the same order and none waits on another in a cycle.
   * It runs within the time of {@code leader}, whose thread runs it: no call waits on a batch
   * past its own time, and neither does the leader's caller.
   */
  private void decide(List<Pending> batch, Pending leader) {
    List<Pending> sorted = new ArrayList<>(batch);
    sorted.sort(Comparator.comparing(p -> p.call.key()));
    try {
      if (closed.get()) {
        throw new StoreUnavailableException("the store " + settings.describe + " is closed", null);
      }
      try (Pool.Lease lease = pool.lease(leader.deadline)) {
        // Calls whose callers gave up while the leader waited for a connection stay unsent.
        List<Pending> sending = new ArrayList<>(sorted.size());
        for (Pending p : sorted) {
          if (p.send()) {
            sending.add(p);
          }
        }
        if (!sending.isEmpty()) {
          decide(lease.connection, sending);
        }
      } catch (SQLException e) {
        for (Pending p : sorted) {
          p.failure = Failures.translate(e, "rate limiter '" + p.call.key() + "'", settings.describe);
        }
      }
    } catch (RuntimeException e) {
      for (Pending p : sorted) {
        p.failure = e;
      }
    } finally {
      for (Pending p : sorted) {
        if (p.decision == null && p.refusal == null && p.failure == null) {
          p.failure = new StoreException("rate limiter '" + p.call.key() + "' in " + settings.describe
              + " got no answer from its batch");
        }
        p.complete();
      }
    }
  }

  private void decide(Connection c, List<Pending> sorted) throws SQLException {
    int n = sorted.size();
    String[] keys = new String[n];
    String[] ops = new String[n];
    Long[] permits = new Long[n];
    Long[] clocks = new Long[n];
    Long[] mineAt = new Long[n + 1];
    Long[] zonesAt = new Long[n + 1];
    List<Long> mine = new ArrayList<>(3 * n);
    List<Long> zones = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Pending p = sorted.get(i);
      keys[i] = p.call.key();
      ops[i] = LimiterArguments.operation(p.operation);
      permits[i] = p.permits;
      clocks[i] = serverClock ? null : p.clientNow;
      mineAt[i] = (long) mine.size() + 1;
      zonesAt[i] = (long) zones.size() + 1;
      mine.addAll(Arrays.asList(SqlLimiterArguments.limits(p.call)));
      Long[] z = SqlLimiterArguments.zones(p.call, p.clientNow);
      if (z != null) {
        zones.addAll(Arrays.asList(z));
      }
    }
    mineAt[n] = (long) mine.size() + 1;
    zonesAt[n] = (long) zones.size() + 1;
    Map<String, Object> v = values("keys", keys, "ops", ops, "permits", permits, "clocks", clocks,
        "mine", mine.toArray(new Long[0]), "mineAt", mineAt, "zones", zones.toArray(new Long[0]), "zonesAt", zonesAt);
    try (PreparedStatement ps = c.prepareStatement(batchLimit.text)) {
      bind(c, ps, batchLimit, v);
      try (ResultSet rs = ps.executeQuery()) {
        for (Pending p : sorted) {
          if (!rs.next()) {
            throw new StoreException("the batch of " + n + " limiter calls in " + settings.describe
                + " answered fewer rows than calls");
          }
          String refusal = rs.getString(2);
          if (refusal != null) {
            p.refusal = refusal;
          } else {
            p.decision = decision(rs.getArray(1));
          }
        }
      }
    }
  }

  private static Decision decision(Array array) throws SQLException {
    Long[] d = (Long[]) array.getArray();
    // A mismatch of the limits adds two values at the end (the schema's limit_step): 6 or
    // 6 + 3n values become 8 or 8 + 3n, which no count of limits gives.
    int end = d.length % 3 == 2 ? d.length - 2 : d.length;
    long[] perLimit = null;
    if (end > 6) {
      perLimit = new long[end - 6];
      for (int i = 0; i < perLimit.length; i++) {
        perLimit[i] = d[6 + i];
      }
    }
    Decision decision = new Decision(d[0] == 1, d[1], d[2], d[3], d[4], d[5].intValue(), perLimit);
    if (end == d.length) {
      return decision;
    }
    Decision.Mismatch mismatch = switch (d[end].intValue()) {
      case 1 -> Decision.Mismatch.UPGRADED;
      case 2 -> Decision.Mismatch.ADOPTED;
      case 3 -> Decision.Mismatch.CONFLICT;
      default -> throw new IllegalStateException("the limit function answered an unknown mismatch " + d[end]);
    };
    return decision.withMismatch(mismatch, d[end + 1]);
  }

  private RuntimeException limiterFailure(String key, String code, SQLException e) {
    if (code.startsWith("TALLY_NOT_LIMITER")) {
      return Failures.counterHere(key);
    }
    if (code.startsWith("TALLY_NO_QUOTA")) {
      return new IllegalStateException("limiter '" + key + "' has no quota limit to top up");
    }
    if (code.startsWith("TALLY_BAD_STATE")) {
      return new IllegalStateException("stored state of limiter '" + key + "' in " + settings.describe
          + " is unreadable: " + code.substring("TALLY_BAD_STATE".length()).trim()
          + "; it was not written by this version of Tally (reset the limiter to start it afresh)");
    }
    if (code.startsWith("TALLY_BAD_VERSION")) {
      String v = code.substring("TALLY_BAD_VERSION".length()).trim().split("\\s", -1)[0];
      try {
        LimiterRecord.read(key, Integer.parseInt(v), 0, new long[0]);
      } catch (StoreException versioned) {
        return versioned;
      } catch (NumberFormatException unreadable) {
        // fall through
      }
      return new StoreException("the state of rate limiter '" + key + "' has an unknown record format " + v, e);
    }
    if (code.startsWith("TALLY_CLOCK_SKEW")) {
      return new StoreException("the clocks of this host and of " + settings.describe + " disagree by more"
          + " than a day, so the quota boundaries of limiter '" + key + "' cannot be placed", e);
    }
    if (e == null) {
      return new StoreException("rate limiter '" + key + "' in " + settings.describe + " was refused: " + code);
    }
    return Failures.translate(e, "rate limiter '" + key + "'", settings.describe);
  }

  // ------------------------------------------------------------------ expiry

  /** Deletes expired rows and forgotten operation ids; returns how many rows went. */
  int sweep() {
    return run("sweep", c -> {
      int total = 0;
      for (Sql s : new Sql[] {sweep, sweepOps}) {
        int n;
        do {
          try (PreparedStatement ps = c.prepareStatement(s.text)) {
            bind(c, ps, s, values("batch", (long) SWEEP_BATCH, "grace", retentionNanos));
            n = ps.executeUpdate();
          }
          total += n;
        } while (n == SWEEP_BATCH && !closed.get());
      }
      return total;
    });
  }

  private void sweepQuietly() {
    try {
      sweep();
    } catch (RuntimeException e) {
      // the database is away; reads filter expired rows anyway, and the next sweep catches up
    }
  }

  /** The combining queue of limiter calls; null with {@code limiterBatch=off}. */
  LimiterBatches<?> limiterBatches() {
    return batches;
  }

  PostgresSettings settings() {
    return settings;
  }

  DataSource dataSource() {
    return ds;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      if (sweeper != null) {
        sweeper.shutdownNow();
      }
      pool.close();
    }
  }

  @Override
  public String toString() {
    return "PostgresStore[" + settings.describe + "]";
  }
}
