package dev.tally.jdbc;

/**
 * The SQL of every counter operation, each one statement on one row. Expiry is a read-side
 * filter: a row whose {@code exp} has passed is missing to every statement here (reads skip it,
 * writes replace it), whether or not the sweep has deleted it yet.
 *
 * <p>A write that finds a row it may not change (a live rate limiter, a floating counter for an
 * integer operation, an integer overflow of the default) returns no row; {@link PostgresStore}
 * then reads the row to say why ({@link #DIAGNOSE}).
 */
final class Statements {
  private Statements() {}

  private static final String FREE = "(t.exp <= :now OR t.rec = '{}')";

  // A row is free for a new counter when it has expired, of either kind, or is a rate limiter's
  // tombstone (rec = '{}': full again, kept only for the instant it was last decided at).

  /**
   * Integer increment of a live integer counter, or creation at {@code :created} (= default +
   * delta) of a missing or expired key of either kind. The store runs {@link #INCR_EXISTING}
   * first and this only when that found no live integer counter. An overflow of {@code ival + :delta} is
   * PostgreSQL's "bigint out of range" error, which writes nothing.
   */
  static final String INCR = """
      INSERT INTO ${table} AS t (key, ival) VALUES (:key, :created)
      ON CONFLICT (key) DO UPDATE SET
        ival = CASE WHEN %1$s THEN excluded.ival ELSE t.ival + :delta END,
        fval = NULL, rec = NULL, ver = NULL, at = NULL,
        exp = CASE WHEN %1$s THEN NULL ELSE t.exp END
      WHERE t.ival IS NOT NULL OR %1$s
      RETURNING t.ival""".formatted(FREE);

  /** Integer increment of a live integer counter only: the common case, and the whole of incrExisting. */
  static final String INCR_EXISTING = """
      UPDATE ${table} AS t SET ival = t.ival + :delta
      WHERE t.key = :key AND t.ival IS NOT NULL AND (t.exp IS NULL OR t.exp > :now)
      RETURNING t.ival""";

  /**
   * A key's row for a bounded increment, locked until the transaction ends: the integer value,
   * whether it is floating, whether it is free (as for {@link #INCR}) and whether it is a live
   * limiter's. The store decides with {@code CounterMath.addWithin}, then writes with
   * {@link #SET_IVAL}, {@link #RESET_IVAL} or {@link #INSERT_IVAL}.
   */
  static final String LOCK_ROW = """
      SELECT t.ival, t.fval IS NOT NULL, coalesce(%s, false), t.rec IS NOT NULL AND t.rec <> '{}'
      FROM ${table} t WHERE t.key = :key FOR UPDATE""".formatted(FREE);

  /** A locked live integer counter's new value; its expiry stays. */
  static final String SET_IVAL = "UPDATE ${table} SET ival = :value WHERE key = :key RETURNING 1";

  /** A locked free row becomes a new integer counter with no expiry. */
  static final String RESET_IVAL = """
      UPDATE ${table} SET ival = :value, fval = NULL, rec = NULL, ver = NULL, at = NULL, exp = NULL
      WHERE key = :key RETURNING 1""";

  /** A new integer counter where there is no row; no row back if another writer made one first. */
  static final String INSERT_IVAL = """
      INSERT INTO ${table} (key, ival) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING
      RETURNING ival""";

  /**
   * Floating increment: a live counter of either number kind becomes floating; a missing or
   * expired key starts at {@code :created}. PostgreSQL refuses a sum that overflows to an
   * infinity ("value out of range: overflow"), writing nothing.
   */
  static final String INCR_DOUBLE = """
      INSERT INTO ${table} AS t (key, fval) VALUES (:key, :created::float8)
      ON CONFLICT (key) DO UPDATE SET
        fval = CASE WHEN %1$s THEN excluded.fval ELSE coalesce(t.fval, t.ival::float8) + :delta END,
        ival = NULL, rec = NULL, ver = NULL, at = NULL,
        exp = CASE WHEN %1$s THEN NULL ELSE t.exp END
      WHERE t.rec IS NULL OR %1$s
      RETURNING t.fval""".formatted(FREE);

  /** Floating increment of a live counter only: default + delta is an infinity. */
  static final String INCR_DOUBLE_EXISTING = """
      UPDATE ${table} AS t SET fval = coalesce(t.fval, t.ival::float8) + :delta, ival = NULL
      WHERE t.key = :key AND t.rec IS NULL AND (t.exp IS NULL OR t.exp > :now)
      RETURNING t.fval""";

  /**
   * A live row of either kind: the fourth column says it is a live limiter's, which every counter
   * operation refuses (in this one statement, rather than a second one after a miss).
   */
  static final String GET = """
      SELECT t.ival, t.fval, t.exp, t.rec IS NOT NULL AND t.rec <> '{}' FROM ${table} t
      WHERE t.key = :key AND (t.exp IS NULL OR t.exp > :now)""";

  /** The instant {@code :ttl} from now, saturating; NULL for no ttl (0). */
  private static final String EXPIRY =
      "CASE WHEN :ttl = 0 THEN NULL ELSE least(:now::numeric + :ttl, 9223372036854775807)::bigint END";

  /** Sets a value, replacing a counter or an expired limiter (not a live limiter). */
  static final String PUT = """
      INSERT INTO ${table} AS t (key, ival, fval, exp) VALUES (:key, :ival, :fval::float8, %s)
      ON CONFLICT (key) DO UPDATE SET ival = excluded.ival, fval = excluded.fval, rec = NULL, ver = NULL,
        at = NULL, exp = excluded.exp
      WHERE t.rec IS NULL OR %s
      RETURNING 1""".formatted(EXPIRY, FREE);

  /** Sets a value only where the key is missing or expired. */
  static final String ADD = """
      INSERT INTO ${table} AS t (key, ival, fval, exp) VALUES (:key, :ival, :fval::float8, %s)
      ON CONFLICT (key) DO UPDATE SET ival = excluded.ival, fval = excluded.fval, rec = NULL, ver = NULL,
        at = NULL, exp = excluded.exp
      WHERE %s
      RETURNING 1""".formatted(EXPIRY, FREE);

  /** Reads and deletes a live counter. */
  static final String POP = """
      DELETE FROM ${table} AS t
      WHERE t.key = :key AND t.rec IS NULL AND (t.exp IS NULL OR t.exp > :now)
      RETURNING t.ival, t.fval""";

  /** Reads and deletes a live integer counter (a floating one stays). */
  static final String POP_INTEGER = """
      DELETE FROM ${table} AS t
      WHERE t.key = :key AND t.ival IS NOT NULL AND (t.exp IS NULL OR t.exp > :now)
      RETURNING t.ival""";

  /** Deletes a counter, expired or not; the reply says whether it was live. */
  static final String DELETE = """
      DELETE FROM ${table} AS t WHERE t.key = :key AND t.rec IS NULL
      RETURNING (t.exp IS NULL OR t.exp > :now)""";

  static final String TOUCH = """
      UPDATE ${table} AS t SET exp = %s
      WHERE t.key = :key AND t.rec IS NULL AND (t.exp IS NULL OR t.exp > :now)
      RETURNING 1""".formatted(EXPIRY);

  /** As {@link #GET}: the second column says the row is a live limiter's. */
  static final String TTL = """
      SELECT t.exp - :now, t.rec IS NOT NULL AND t.rec <> '{}' FROM ${table} t
      WHERE t.key = :key AND (t.exp IS NULL OR t.exp > :now)""";

  /**
   * Live counters under a prefix, in key order. {@code :pattern} is the prefix with LIKE's
   * wildcards escaped and a {@code %}: on the {@code "C"}-collated key the primary key index
   * serves it as a range scan.
   */
  static final String KEYS = """
      SELECT t.key FROM ${table} t
      WHERE t.key LIKE :pattern AND t.rec IS NULL AND (t.exp IS NULL OR t.exp > :now)
      ORDER BY t.key""";

  /** What a row is, when a write could not change it. */
  static final String DIAGNOSE = """
      SELECT t.ival IS NOT NULL, t.fval IS NOT NULL, t.rec IS NOT NULL,
        (t.exp IS NULL OR t.exp > :now) AND t.rec IS DISTINCT FROM '{}'
      FROM ${table} t WHERE t.key = :key""";

  /**
   * Serialises transactions that share a key: each takes a transaction-scoped advisory lock on
   * the hash of every key it touches, in one order, before its first statement. Single-row
   * statements take no such lock, and a transaction holds all its locks before it waits on any
   * row, so no two transactions can wait on each other in a cycle.
   */
  static final String LOCK_KEYS = """
      SELECT count(pg_advisory_xact_lock(h)) FROM (
        SELECT DISTINCT hashtextextended(k, 7226) AS h FROM unnest(:keys::text[]) k ORDER BY 1) s""";

  /** One limiter call: the function the schema defines. */
  static final String LIMIT = "SELECT ${table}_limit(:key, :op, :permits, :clock, :mine::bigint[], :zones::bigint[])";

  /**
   * {@link #LIMIT} committed without waiting for its WAL flush ({@code limiterCommit=async}): the
   * setting is local to the statement's own transaction and read when it commits, so the order
   * of the two select-list items does not matter and nothing else is committed that way.
   */
  static final String LIMIT_ASYNC_COMMIT = LIMIT + ", set_config('synchronous_commit', 'off', true)";

  /**
   * Several limiter calls in one statement, sorted by key, answered one row each in that order
   * (see {@code <table>_limit_batch}).
   */
  static final String LIMIT_BATCH = "SELECT b.d, b.err FROM ${table}_limit_batch(:keys::text[], :ops::text[],"
      + " :permits::bigint[], :clocks::bigint[], :mine::bigint[], :mineAt::int[], :zones::bigint[], :zonesAt::int[]) b";

  /**
   * A joint decision: several limiters, sorted by key, all granted or none (see
   * {@code <table>_limit_all}), answered one row each in that order.
   */
  static final String LIMIT_ALL = "SELECT a.d FROM ${table}_limit_all(:keys::text[], :permits, :clock,"
      + " :mine::bigint[], :mineAt::int[], :zones::bigint[], :zonesAt::int[]) a";

  /** {@link #LIMIT_BATCH} committed as {@link #LIMIT_ASYNC_COMMIT} is. */
  static final String LIMIT_BATCH_ASYNC_COMMIT = LIMIT_BATCH.replace("b.err FROM",
      "b.err, set_config('synchronous_commit', 'off', true) FROM");

  /**
   * Deletes up to {@code :batch} expired rows that nobody is working on; a limiter's tombstone
   * stays for {@code :grace} more, so that its decision instant outlives its state.
   */
  static final String SWEEP = """
      DELETE FROM ${table} WHERE key IN (
        SELECT t.key FROM ${table} t
        WHERE t.exp <= :now - :grace OR (t.exp <= :now AND t.rec IS DISTINCT FROM '{}')
        LIMIT :batch FOR UPDATE SKIP LOCKED)""";

  /**
   * Claims an operation id: inserts its row with an empty record, or takes over a row whose
   * retention has passed. No row back: the id is live (this waits for a transaction that is
   * applying the same id to end, so it then reads that one's record).
   */
  static final String CLAIM_ID = """
      INSERT INTO ${table}_ops AS o (id, record, exp) VALUES (:id, '', least(:now::numeric + :retention, 9223372036854775807)::bigint)
      ON CONFLICT (id) DO UPDATE SET record = '', exp = excluded.exp WHERE o.exp <= :now
      RETURNING 1""";

  static final String READ_ID = "SELECT o.record FROM ${table}_ops o WHERE o.id = :id";

  static final String RECORD_ID = "UPDATE ${table}_ops SET record = :record WHERE id = :id";

  /** Forgets operation ids past their retention. */
  static final String SWEEP_OPS = """
      DELETE FROM ${table}_ops WHERE id IN (
        SELECT o.id FROM ${table}_ops o WHERE o.exp <= :now LIMIT :batch FOR UPDATE SKIP LOCKED)""";
}
