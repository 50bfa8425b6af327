package dev.tally;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.function.Consumer;

/**
 * Named counters shared by every thread, process and host that opens the same store.
 *
 * <p>Every operation is atomic on its own; {@link #transaction} makes several atomic together.
 * The semantics are the same on every store and are checked by the conformance kit:
 *
 * <ul>
 *   <li>{@code incr(key, delta, default)}: a missing or expired key becomes
 *       {@code default + delta} with <em>no</em> expiry; a live key becomes
 *       {@code value + delta} and <em>keeps</em> its expiry. The new value is returned.
 *   <li>Integer counters are signed 64-bit; going past the range throws
 *       {@link CounterOverflowException} and leaves the value as it was. A floating delta makes
 *       a floating counter; NaN and infinities are rejected.
 *   <li>Keys are non-empty strings of at most {@value #MAX_KEY_BYTES} UTF-8 bytes, counted with
 *       the group prefix. Bad input throws {@link IllegalArgumentException} before anything is
 *       written.
 * </ul>
 *
 * <p>Counting views from many workers (each {@code incr} is one atomic step, so 8 threads of
 * 250 views always make 2000):
 *
 * <pre>{@code
 * Counters views = tally.counters("views");
 * views.incr("episode:512");                   // 1, then 2, ... shared by every worker
 * }</pre>
 *
 * <p>Flushing counts to a database without losing one: {@link #pop} reads and deletes in one
 * step, so a view recorded while the flush runs lands in a fresh counter.
 *
 * <pre>{@code
 * for (String key : views.keys("episode:")) {
 *   long pending = views.pop(key).orElse(0);
 *   if (pending != 0) db.addViews(key, pending);
 * }
 * }</pre>
 *
 * <p>Run something every 100 calls, however many servers call (the returned value is exact):
 *
 * <pre>{@code
 * if (counters.incr("calls") % 100 == 0) {
 *   runFunction();
 *   counters.decr("calls", 100);
 * }
 * }</pre>
 *
 * <p>Instances are thread-safe and cheap; get them from {@link Tally#counters()}.
 */
public interface Counters {
  /**
   * The longest ttl a counter keeps, about 146 years: a longer one is kept as this, so that
   * {@code now + ttl} never overflows.
   */
  Duration MAX_TTL = Duration.ofNanos(Long.MAX_VALUE / 2);


  /** The largest key, in UTF-8 bytes including any group prefix; the same on every store. */
  int MAX_KEY_BYTES = 1024;

  /** The group name this view prefixes its keys with ({@code ""} for the root view). */
  String name();

  /** The policy applied when the store fails. */
  FailurePolicy failurePolicy();

  /** A view of these counters with another failure policy (same store, same prefix). */
  Counters withFailurePolicy(FailurePolicy policy);

  /** The same counters with an asynchronous API. */
  AsyncCounters async();

  /**
   * A view of these counters whose mutating calls carry the operation id {@code id}, so that a
   * retried call counts once: within the store's retention window (an hour unless
   * {@link Tally.Builder#operationRetention} says otherwise) a repeat applies nothing and returns
   * exactly what the first call returned, from any process or host, even if the first reply was
   * lost. Reads are unaffected.
   *
   * <pre>{@code
   * long views = counters.withOperationId(request.id()).incr("views:episode:512");
   * }</pre>
   *
   * <p>An id names one operation: the view is for one call (and its retries). Another operation
   * with the same id is refused with {@link OperationIdConflictException}.
   *
   * @param id 1 to 128 printable ASCII characters, e.g. a UUID
   * @throws IllegalArgumentException if the id is empty, too long or has other characters
   */
  Counters withOperationId(String id);

  // ---------------------------------------------------------------- increments

  /** Adds 1, starting a missing counter at 0. Returns the new value. */
  long incr(String key);

  /** Adds {@code delta}, starting a missing counter at 0. Returns the new value. */
  long incr(String key, long delta);

  /**
   * Adds {@code delta}; a missing or expired counter becomes {@code dflt + delta} with no expiry,
   * a live one keeps its expiry. Returns the new value.
   *
   * <pre>{@code
   * counters.put("mykey", 0);
   * counters.incr("mykey", 10);               // 10
   * counters.incr("mykey", 5);                // 15
   * counters.decr("mykey", 14);               // 1
   * counters.incr("nonexistantkey", 0, 0);    // 0
   * counters.incr("someotherkey", 0, 10);     // 10
   * counters.incr("yetanotherkey", 1, 10);    // 11
   * }</pre>
   *
   * @throws CounterOverflowException if the result would leave the signed 64-bit range
   * @throws NotAnIntegerException if the counter holds a floating value
   */
  long incr(String key, long delta, long dflt);

  /**
   * Adds {@code delta} to a counter that must exist; never creates one.
   *
   * @throws KeyNotFoundException if the counter is missing or expired (nothing is written)
   */
  long incrExisting(String key, long delta);

  /** Subtracts 1, starting a missing counter at 0. Returns the new value. */
  long decr(String key);

  /** Subtracts {@code delta}, starting a missing counter at 0. Returns the new value. */
  long decr(String key, long delta);

  /**
   * Subtracts {@code delta}; a missing counter becomes {@code dflt - delta} (the default is not
   * negated). A quota that counts down:
   *
   * <pre>{@code
   * boolean consumeQuota(long userId, long units) {
   *   String key = "quota:" + userId + ":2026-11";
   *   counters.add(key, 1000, Duration.ofDays(40));   // the first call this period sets it
   *   return counters.decr(key, units) >= 0;
   * }
   * // consumeQuota(42, 999), consumeQuota(42, 1), consumeQuota(42, 1) -> true, true, false
   * }</pre>
   */
  long decr(String key, long delta, long dflt);

  /** Subtracts {@code delta} from a counter that must exist. @see #incrExisting */
  long decrExisting(String key, long delta);

  /**
   * Adds {@code delta} within {@code bounds}: applied if the result lies within them, else
   * refused (nothing changes) or, with {@link Bounds#saturate()}, set to the bound crossed. A
   * missing or expired counter starts from {@code dflt}. A quota that never goes below zero:
   *
   * <pre>{@code
   * boolean consumeQuota(long userId, long units) {
   *   String key = "quota:" + userId + ":2026-11";
   *   counters.add(key, 1000, Duration.ofDays(40));   // the first call this period sets it
   *   return counters.decr(key, units, 0, Bounds.floor(0)).applied();
   * }
   * // consumeQuota(42, 999), consumeQuota(42, 5), consumeQuota(42, 1) -> true, false, true
   * }</pre>
   *
   * @return whether it was applied, and the value after the call (the value kept if refused)
   * @throws IllegalArgumentException if {@code dflt} lies outside {@code bounds} (nothing written)
   * @throws NotAnIntegerException if the counter is floating (nothing written)
   */
  BoundedResult incr(String key, long delta, long dflt, Bounds bounds);

  /** Subtracts {@code delta} within {@code bounds}. @see #incr(String, long, long, Bounds) */
  BoundedResult decr(String key, long delta, long dflt, Bounds bounds);

  /**
   * Adds a floating {@code delta}; the counter becomes (or stays) floating. A missing or expired
   * counter becomes {@code dflt + delta}.
   *
   * @throws IllegalArgumentException if {@code delta} or {@code dflt} is NaN or infinite
   * @throws CounterOverflowException if the result would be infinite
   */
  double incr(String key, double delta, double dflt);

  /** Adds a floating {@code delta}, starting a missing counter at 0.0. */
  double incr(String key, double delta);

  // ---------------------------------------------------------------- reads and writes

  /**
   * The integer value, or empty if the counter is missing or expired.
   *
   * @throws NotAnIntegerException if the counter holds a floating value
   */
  OptionalLong get(String key);

  /** The value as a double, integer or floating; empty if missing or expired. */
  OptionalDouble getDouble(String key);

  /** Sets the counter to {@code value} with no expiry. */
  void put(String key, long value);

  /** Sets the counter to {@code value}, expiring after {@code ttl}. */
  void put(String key, long value, Duration ttl);

  /** Sets the counter to a floating {@code value}, expiring after {@code ttl} if not null. */
  void put(String key, double value, Duration ttl);

  /**
   * Sets the counter only if it is missing or expired; exactly one of many concurrent callers
   * wins. Returns whether this call set it. With {@code incr}, counters that clean themselves up:
   *
   * <pre>{@code
   * long recordDownload(String fileId, LocalDate day) {
   *   String key = "downloads:" + fileId + ":" + day;
   *   counters.add(key, 0, Duration.ofDays(40));      // keep 40 days of history
   *   return counters.incr(key);                      // incr keeps the expiry add set
   * }
   * }</pre>
   *
   * @param ttl the expiry, or {@code null} for none
   */
  boolean add(String key, long value, Duration ttl);

  /**
   * Sets {@code key} to {@code value}, with no expiry, only if it is missing or expired; of
   * concurrent callers exactly one wins.
   *
   * @return whether this call set it
   */
  default boolean add(String key, long value) {
    return add(key, value, null);
  }

  /** {@link #add(String, long, Duration)} for a floating value. */
  boolean add(String key, double value, Duration ttl);

  /**
   * Reads and deletes the counter in one atomic step. An increment racing with it lands either
   * in the popped value or in a fresh counter, never nowhere.
   *
   * @throws NotAnIntegerException if the counter holds a floating value (it is not deleted)
   */
  OptionalLong pop(String key);

  /** {@link #pop} for a counter of either kind, as a double. */
  OptionalDouble popDouble(String key);

  /** Deletes the counter. Returns whether it existed (and had not expired). */
  boolean delete(String key);

  /**
   * Sets the expiry of an existing counter, keeping its value.
   *
   * @param ttl the new expiry, or {@code null} to make the counter permanent
   * @return whether the counter existed
   */
  boolean touch(String key, Duration ttl);

  /**
   * The time left before the counter expires; empty if it is missing or never expires (read
   * {@link #get} to tell those apart).
   */
  Optional<Duration> ttl(String key);

  /**
   * Whether {@code key} exists and when it expires, telling a missing key from one that never
   * expires (which {@link #ttl} does not).
   */
  Expiry expiry(String key);

  /**
   * The keys of live counters that start with {@code prefix}, without this group's prefix, in no
   * particular order. On network stores this scans the store: use it for periodic flushes, not
   * per request.
   */
  List<String> keys(String prefix);

  /**
   * Applies several operations atomically: all or none apply, and no reader (nor another
   * transaction) sees some applied and others not. If any operation fails (overflow, a missing
   * key for an {@code incrExisting}), none is applied and the exception is thrown.
   *
   * <pre>{@code
   * counters.transaction(tx -> {
   *   tx.incr("req:total");
   *   tx.incr("req:path:/a");
   *   tx.incr("req:status:200");
   * });
   * }</pre>
   *
   * @return the result of each operation, in order
   */
  TransactionResult transaction(Consumer<Transaction> operations);
}
