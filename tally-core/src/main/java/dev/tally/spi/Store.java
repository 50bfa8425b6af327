package dev.tally.spi;

import dev.tally.CounterOverflowException;
import dev.tally.Decision;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import java.util.List;

/**
 * What a store implements: the counter operations, each atomic, with the semantics the
 * conformance kit ({@code tally-tck}) checks. Tally validates keys and numbers before calling a
 * store, applies group prefixes and failure policies around it, and adapts it to the
 * asynchronous API, so a store only does storage.
 *
 * <p>Values cross this interface as {@code Long} (integer counters) or {@code Double}
 * (floating counters). Durations are relative nanoseconds; {@link #NO_TTL} means "no expiry".
 * A store that cannot reach its backend throws {@link dev.tally.StoreUnavailableException} or
 * {@link dev.tally.StoreTimeoutException}; nothing else may escape as an unchecked surprise.
 *
 * <p>Implementations are thread-safe.
 */
public interface Store extends AutoCloseable {

  /** A ttl argument meaning "no expiry". */
  long NO_TTL = 0L;

  /** {@link #ttl} of a key that does not exist (or has expired). */
  long TTL_MISSING = -2L;

  /** {@link #ttl} of a key that exists and never expires. */
  long TTL_PERMANENT = -1L;

  /**
   * Adds {@code delta}. A missing or expired key becomes {@code dflt + delta} with no expiry
   * (unless {@code create} is false: then {@link KeyNotFoundException}); a live key keeps its
   * expiry.
   *
   * @throws CounterOverflowException if the result leaves the 64-bit range (nothing written)
   * @throws NotAnIntegerException if the key holds a floating value (nothing written)
   */
  long incr(String key, long delta, long dflt, boolean create);

  /** Floating add; an integer counter becomes floating. Infinite results overflow. */
  double incrDouble(String key, double delta, double dflt);

  /** The value ({@code Long} or {@code Double}) or {@code null} if missing or expired. */
  Number get(String key);

  /** Sets a value, replacing any, with the given ttl ({@link #NO_TTL} for none). */
  void put(String key, Number value, long ttlNanos);

  /** Sets a value only if the key is missing or expired; returns whether it did. */
  boolean add(String key, Number value, long ttlNanos);

  /**
   * Reads and deletes in one atomic step; {@code null} if missing or expired.
   *
   * @param integerOnly when true a floating value throws {@link NotAnIntegerException} and is
   *     left in place
   */
  Number pop(String key, boolean integerOnly);

  /** Deletes; returns whether a live key was deleted. */
  boolean delete(String key);

  /** Sets the expiry of a live key ({@link #NO_TTL}: make permanent); returns whether it was live. */
  boolean touch(String key, long ttlNanos);

  /** Nanoseconds until expiry, {@link #TTL_PERMANENT} or {@link #TTL_MISSING}. */
  long ttl(String key);

  /** Full keys of live counters starting with {@code prefix} (which may be empty). */
  List<String> keys(String prefix);

  /**
   * Applies the operations atomically and returns one result per operation: the new value for
   * increments and puts, {@code 1L}/{@code 0L} for deletes, the value or {@code null} for gets.
   * If one fails, none is applied and its exception is thrown.
   */
  Number[] transact(List<TxOp> ops);

  /**
   * Runs a rate limiter's state machine atomically on the limiter's key: see {@link LimiterCall}
   * for what atomically means. Uses the store's clock, or the {@link StoreContext#timeSource()}
   * when {@link StoreContext#timeSourceOverridden()}.
   *
   * @throws UnsupportedOperationException if the store has no rate limiters
   */
  default Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " has no rate limiters");
  }

  /**
   * Runs one step of a concurrency limit atomically on the call's key: read the
   * {@link ConcurrencyRecord} there, {@link ConcurrencyMachine#apply}, write the next record when
   * it changed, as one step with respect to every other caller of the key. Uses the store's clock,
   * or the {@link StoreContext#timeSource()} when {@link StoreContext#timeSourceOverridden()}.
   *
   * @throws UnsupportedOperationException if the store has no concurrency limits
   */
  default ConcurrencyResult concurrency(ConcurrencyCall call) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " has no concurrency limits");
  }

  /**
   * Decides {@code permitsEach} on every one of {@code calls} as one step: each call is decided at
   * one instant (the store's clock read once, each key then no earlier than its own
   * {@link LimiterRecord#decidedAt()}), with respect to every other caller of any of the keys. If
   * every call allows, every one consumes; otherwise nothing changes on any key. {@link JointLimit}
   * holds the rule; a store runs it over the records it holds, locked together (in key order, so
   * that two overlapping calls cannot deadlock) or in one script or transaction.
   *
   * <p>There is deliberately no default that decides key by key: that is the race this method
   * exists to close (a later key refuses after an earlier one consumed). A store that cannot
   * decide the keys together throws.
   *
   * @param calls at least one, each key once ({@link JointLimit#check})
   * @return one decision per call, in order; see {@link JointLimit#decide} for what each says
   * @throws UnsupportedOperationException if the store cannot decide several keys atomically
   */
  default Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    throw JointLimit.unsupported(getClass().getSimpleName());
  }

  /**
   * A fast path for {@code call}'s acquires, or {@code null} (the default) to go through
   * {@link #limit} every time. Asked once per limiter handle.
   */
  default LimiterShortcut shortcut(LimiterCall call) {
    return null;
  }

  /**
   * Applies {@code mutation} at most once per {@code id}: the first call applies it and keeps its
   * result for the {@link StoreContext#operationRetention() retention window}; a repeat within the
   * window applies nothing and returns that result, from any thread, process or host, and even if
   * the first call's reply was lost on its way. The check and the application are one atomic step:
   * of concurrent calls with one id exactly one applies, and the others return its result. A call
   * that throws records nothing. After the window, a repeat applies again.
   *
   * <p>The id's record expires on the same clock as the store's counters (its own, or the
   * supplied one when {@link StoreContext#timeSourceOverridden()}). Keep it in the same atomic
   * unit as the mutation (the same script, conditional write, or file transaction), so that no
   * crash or lost reply can separate the two; {@link OperationRecord} is a text form any store can
   * keep.
   *
   * @return the result, of the type {@link Mutation} documents for its kind
   * @throws dev.tally.OperationIdConflictException if the id was first used for another operation
   *     (another {@link Mutation#fingerprint()}); nothing is applied
   */
  default Object applyOnce(OperationId id, Mutation mutation) {
    throw new UnsupportedOperationException(getClass().getSimpleName()
        + " does not support operation ids");
  }

  /**
   * Whether operations may block on I/O. The default asynchronous adapter runs blocking stores'
   * operations on an executor and non-blocking ones inline, on the caller's thread (which may be
   * an event loop serving many connections). A store whose operations only touch memory, and wait
   * at most for another caller's short locked section, is not blocking: memory, and the file store
   * unless it forces every write to the device. {@link #keys} runs on the executor either way.
   */
  default boolean blocking() {
    return true;
  }

  /**
   * This store's native asynchronous form, for stores built on a non-blocking client, or
   * {@code null} (the default) to let Tally adapt the methods above. It is a separate object
   * because one class cannot implement both interfaces: their methods differ only in return type.
   */
  default AsyncStore async() {
    return null;
  }

  /** Releases connections, files and threads. Idempotent. */
  @Override
  void close();
}
