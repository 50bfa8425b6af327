package dev.tally.redis;

import dev.tally.CounterOverflowException;
import dev.tally.Decision;
import dev.tally.NotAnIntegerException;
import dev.tally.TimeSource;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyOperation;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.CounterMath;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.OperationRecord;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.TxOp;
import io.lettuce.core.GetExArgs;
import io.lettuce.core.KeyScanArgs;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.LongFunction;

/**
 * Counters on Redis, natively asynchronous: every operation is one Lettuce command, or one
 * {@code EVALSHA} of {@code counters.lua}, on the shared pipelined connection.
 *
 * <table>
 *   <caption>One round trip per operation</caption>
 *   <tr><th>operation</th><th>Redis</th></tr>
 *   <tr><td>incr, default 0</td><td>{@code INCRBY} (keeps the expiry, refuses overflow and floats by itself;
 *       concurrent blocking increments of one key share one, {@link IncrBatches})</td></tr>
 *   <tr><td>incr with another default, incrExisting, floating incr</td><td>{@code EVALSHA counters.lua}</td></tr>
 *   <tr><td>get</td><td>{@code GET}</td></tr>
 *   <tr><td>put</td><td>{@code SET [PX]}</td></tr>
 *   <tr><td>add</td><td>{@code SET NX [PX]}</td></tr>
 *   <tr><td>pop (integer)</td><td>{@code EVALSHA counters.lua}: a floating counter must stay</td></tr>
 *   <tr><td>popDouble</td><td>{@code EVALSHA counters.lua}</td></tr>
 *   <tr><td>delete</td><td>{@code DEL}</td></tr>
 *   <tr><td>touch</td><td>{@code GETEX PX} / {@code GETEX PERSIST} (answers whether the key was live)</td></tr>
 *   <tr><td>ttl</td><td>{@code PTTL}</td></tr>
 *   <tr><td>keys</td><td>{@code SCAN MATCH TYPE string} on every primary</td></tr>
 *   <tr><td>transaction</td><td>{@code EVALSHA counters.lua} with every key</td></tr>
 *   <tr><td>every rate limiter call</td><td>{@code EVALSHA limiter.lua} (or nothing, for a
 *       denial the optional {@link DenyCache} already knows)</td></tr>
 * </table>
 *
 * <p>Expiry is Redis' own ({@code PX}, on the server clock). Stages complete on Lettuce's I/O
 * threads: continuations that block must move elsewhere ({@code thenApplyAsync}).
 */
final class AsyncRedisStore implements AsyncStore {
  /** An increment from 0 under an operation id: the common idempotent call, kept small. */
  static final Script ONCE_INCR = Script.load("once-incr.lua");

  private final RedisConnection connection;
  private final boolean cluster;
  private final Duration timeout;
  private final TimeSource clock;
  private final boolean clockOverridden;
  private final DenyCache denyCache; // null unless ?denyCache=true
  private final LimiterBatches batches; // null under a supplied clock, or with ?batch=false
  private final IncrBatches increments; // null with ?batch=false
  private final OperationKeys operationKeys;

  /** @param handoff where completions of blocking limiter calls go ({@link Handoff}) */
  AsyncRedisStore(RedisConnection connection, StoreContext context, RedisSettings settings, Handoff handoff) {
    this.connection = connection;
    this.cluster = connection.cluster();
    this.timeout = connection.timeout();
    this.clock = context.timeSource();
    this.clockOverridden = context.timeSourceOverridden();
    this.denyCache = settings.denyCache ? new DenyCache(settings.denyCacheSize, context.listener()) : null;
    this.batches = settings.batch && !clockOverridden ? new LimiterBatches(this::runBatch, handoff) : null;
    this.increments = settings.batch ? new IncrBatches((key, delta) -> incr(key, delta, 0, true)) : null;
    this.operationKeys = new OperationKeys(cluster, context);
  }

  /**
   * Completes with {@code map(value)} of the command {@code send} sends on the current link, or
   * with the Tally exception for the failure. A failure that calls the link's server into question
   * is reported to the connection ({@link RedisConnection#failed}). A {@code write} with
   * {@code ?replicas=n} completes only once {@code n} replicas hold it ({@link ReplicaAcks}).
   */
  private <T, R> CompletableFuture<R> call(Function<RedisClusterAsyncCommands<String, String>, CompletionStage<T>> send,
      String[] keys, Function<T, R> map, boolean write) {
    Link link = connection.link();
    CompletableFuture<T> reply;
    try {
      reply = send.apply(link.commands).toCompletableFuture();
    } catch (RuntimeException e) { // Lettuce refuses some commands before sending (a closed connection)
      reply = CompletableFuture.failedFuture(e);
    }
    CompletableFuture<T> answered = reply;
    if (write && link.acks != null) {
      answered = reply.thenCompose(value -> link.acks.confirm().thenApply(count -> {
        if (count < link.acks.replicas()) {
          throw ReplicaAcks.unconfirmed(keys, count, link.acks, link.address);
        }
        return value;
      }));
    }
    return answered.handle((value, failure) -> {
      if (failure != null) {
        connection.failed(link, failure);
        throw RedisFailures.translate(failure, keys, timeout);
      }
      return map.apply(value);
    });
  }

  private <T, R> CompletableFuture<R> read(Function<RedisClusterAsyncCommands<String, String>, CompletionStage<T>> send,
      String key, Function<T, R> map) {
    return call(send, new String[] {key}, map, false);
  }

  private <T, R> CompletableFuture<R> write(Function<RedisClusterAsyncCommands<String, String>, CompletionStage<T>> send,
      String key, Function<T, R> map) {
    return call(send, new String[] {key}, map, true);
  }

  /** Runs {@code script} with {@code keys} and {@code args}, as a write. */
  private CompletableFuture<List<Object>> script(Script script, String[] keys, String... args) {
    return script(script, true, keys, args);
  }

  /** Runs {@code script}; a {@code write} waits for the replicas asked for, a read does not. */
  private CompletableFuture<List<Object>> script(Script script, boolean write, String[] keys, String... args) {
    return call(c -> ScriptRunner.<List<Object>>run(c, script, ScriptOutputType.MULTI, keys, args), keys,
        Function.identity(), write);
  }

  /** Runs {@code counters.lua} and returns its list of results, one per operation. */
  private CompletableFuture<List<Object>> run(CounterScript s) {
    return run(s, true);
  }

  private CompletableFuture<List<Object>> run(CounterScript s, boolean write) {
    String[] keys = s.keys();
    String[] args = s.args();
    return call(c -> ScriptRunner.<List<Object>>run(c, CounterScript.SCRIPT, ScriptOutputType.MULTI, keys, args),
        keys, Function.identity(), write);
  }

  private static String first(List<Object> results) {
    return (String) results.get(0);
  }

  @Override
  public CompletableFuture<Long> incr(String key, long delta, long dflt, boolean create) {
    if (create && dflt == 0) {
      return write(c -> c.incrby(key, delta), key, Function.identity())
          .exceptionallyCompose(failure -> refusedIncrement(key, delta, failure));
    }
    return run(new CounterScript().incr(key, delta, dflt, create)).thenApply(r -> Long.parseLong(first(r)));
  }

  /**
   * Why {@code INCRBY} refused: it says "not an integer" both for a floating counter, which
   * needs the double forms, and for a value that is no counter at all, and "would overflow"
   * without the value that CounterMath's message names. Nothing was written, so a {@code GET}
   * tells (a value changed meanwhile keeps the first answer).
   */
  private CompletableFuture<Long> refusedIncrement(String key, long delta, Throwable failure) {
    Throwable cause = RedisFailures.unwrap(failure);
    if (cause instanceof CounterOverflowException overflow) {
      return read(c -> c.get(key), key, value -> {
        if (value != null && CounterValues.isInteger(value)) {
          try {
            CounterMath.add(key, Long.parseLong(value), delta); // throws with the numbers
          } catch (NumberFormatException outOfRange) {
            // not a value INCRBY accepts: keep Redis' answer
          }
        }
        throw overflow;
      });
    }
    if (!(cause instanceof NotAnIntegerException notAnInteger)) {
      return CompletableFuture.failedFuture(cause);
    }
    return read(c -> c.get(key), key, value -> {
      if (value != null) {
        CounterValues.decode(key, value); // throws for a value that is not a counter
      }
      throw notAnInteger;
    });
  }

  /**
   * {@link #incr} for the blocking API: concurrent increments of one key from 0 share an
   * {@code INCRBY} ({@link IncrBatches}).
   */
  CompletableFuture<Long> incrShared(String key, long delta, long dflt, boolean create) {
    if (increments == null || !create || dflt != 0) {
      return incr(key, delta, dflt, create);
    }
    return increments.submit(key, delta);
  }

  @Override
  public CompletableFuture<Double> incrDouble(String key, double delta, double dflt) {
    return run(new CounterScript().incrDouble(key, delta, dflt)).thenApply(r -> Double.parseDouble(first(r)));
  }

  @Override
  public CompletableFuture<Number> get(String key) {
    return read(c -> c.get(key), key, v -> CounterValues.decode(key, v));
  }

  // put, add, delete and ttl go through the counter script, not SET, DEL and PTTL: those would
  // overwrite, delete or report a limiter's hash under its name, where every counter operation
  // must refuse the name (the script's GET raises WRONGTYPE on a hash).
  @Override
  public CompletableFuture<Void> put(String key, Number value, long ttlNanos) {
    return run(new CounterScript().put(key, value, ttlNanos)).thenApply(r -> null);
  }

  @Override
  public CompletableFuture<Boolean> add(String key, Number value, long ttlNanos) {
    return run(new CounterScript().add(key, value, ttlNanos)).thenApply(r -> "1".equals(first(r)));
  }

  @Override
  public CompletableFuture<Number> pop(String key, boolean integerOnly) {
    // A script, not GETDEL: a value that is not a counter is refused before anything is deleted.
    CounterScript pop = integerOnly ? new CounterScript().popInteger(key) : new CounterScript().pop(key);
    return run(pop).thenApply(r -> CounterValues.decode(key, first(r)));
  }

  @Override
  public CompletableFuture<Boolean> delete(String key) {
    return run(new CounterScript().delete(key)).thenApply(r -> "1".equals(first(r)));
  }

  @Override
  public CompletableFuture<Boolean> touch(String key, long ttlNanos) {
    GetExArgs args = ttlNanos == Store.NO_TTL
        ? new GetExArgs().persist() : new GetExArgs().px(CounterScript.millis(ttlNanos));
    return write(c -> c.getex(key, args), key, v -> v != null);
  }

  @Override
  public CompletableFuture<Long> ttl(String key) {
    return run(new CounterScript().ttl(key), false).thenApply(r -> {
      long ms = Long.parseLong(first(r));
      return ms == -2 ? Store.TTL_MISSING : ms == -1 ? Store.TTL_PERMANENT : ms * 1_000_000;
    });
  }

  /**
   * {@code SCAN} on every primary (Lettuce walks a Cluster's primaries one after the other),
   * matching the prefix literally. SCAN may return a key twice, hence the set; it skips
   * expired keys by itself.
   */
  @Override
  public CompletableFuture<List<String>> keys(String prefix) {
    KeyScanArgs args = KeyScanArgs.Builder.type("string");
    args.match(globLiteral(prefix) + "*").limit(1000);
    String[] described = {prefix + "*"};
    Set<String> found = new LinkedHashSet<>();
    return scanFrom(ScanCursor.INITIAL, args, found, described).thenApply(done -> new ArrayList<>(found));
  }

  private CompletableFuture<Void> scanFrom(ScanCursor cursor, KeyScanArgs args, Set<String> found, String[] described) {
    return call(c -> c.scan(cursor, args), described, Function.identity(), false).thenCompose(page -> {
      found.addAll(page.getKeys());
      return page.isFinished() ? CompletableFuture.completedFuture(null) : scanFrom(page, args, found, described);
    });
  }

  /** {@code s} with the glob characters of {@code SCAN MATCH} escaped. */
  static String globLiteral(String s) {
    StringBuilder b = new StringBuilder(s.length() + 8);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
        b.append('\\');
      }
      b.append(c);
    }
    return b.toString();
  }

  @Override
  public CompletableFuture<Number[]> transact(List<TxOp> ops) {
    CounterScript s = CounterScript.of(ops);
    if (cluster) {
      requireOneSlot(s.keys());
    }
    return run(s).thenApply(results -> {
      Number[] out = new Number[ops.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = CounterValues.decode(ops.get(i).key(), (String) results.get(i));
      }
      return out;
    });
  }

  /**
   * One {@code EVALSHA} of {@code limiter.lua}: the limiter's state machine, run inside Redis on
   * the hash at the limiter's key, deciding and writing in one atomic step. No retry loop: there
   * is nothing to retry, since no other caller can interleave with a script.
   *
   * <p>The script decides at the server's {@code TIME}, so clients with skewed clocks agree;
   * when the user supplied a clock ({@link StoreContext#timeSourceOverridden()}) it decides at
   * that clock's time instead, passed in {@code ARGV}. With the deny cache on, an acquisition it
   * knows to be denied is answered without a call. On the server's clock, concurrent
   * acquisitions and peeks on one limiter share a call ({@link LimiterBatches}).
   */
  @Override
  public CompletableFuture<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
    return limit(call, operation, permits, false);
  }

  /** {@link #limit}; {@code blocking} if the caller waits for the answer in {@link ReplyWait}. */
  CompletableFuture<Decision> limit(LimiterCall call, LimiterOperation operation, long permits, boolean blocking) {
    String key = call.key();
    long stamp = 0;
    long sentAt = 0;
    if (denyCache != null) {
      if (operation == LimiterOperation.ACQUIRE) {
        if (permits > 0) {
          sentAt = guardClock();
          Decision known = denyCache.lookup(key, permits, sentAt);
          if (known != null) {
            return CompletableFuture.completedFuture(known);
          }
          stamp = denyCache.stamp();
        }
      } else if (operation != LimiterOperation.PEEK) {
        denyCache.invalidate(key);
      }
    }
    CompletableFuture<Decision> decision;
    if (batches != null && LimiterBatches.batchable(operation)) {
      decision = batches.submit(call, operation, permits, blocking);
    } else {
      long now = clock.nanos();
      decision = runLimiter(operation != LimiterOperation.PEEK, new String[] {key},
          at -> LimiterScript.args(call, operation, permits, now, clockOverridden, at), now)
          .thenApply(LimiterScript::decision);
    }
    if (denyCache == null || operation == LimiterOperation.PEEK) {
      return decision;
    }
    long sent = sentAt;
    long since = stamp;
    return decision.whenComplete((d, failure) -> {
      if (operation == LimiterOperation.ACQUIRE) {
        if (d != null && permits > 0) {
          denyCache.denied(key, permits, sent, since, d);
        }
      } else {
        denyCache.invalidate(key); // again, in case a denial was cached while this was in flight
      }
    });
  }

  /**
   * One step of a concurrency limit: {@code concurrency.lua} on the limit's hash, in one round
   * trip, at the server's {@code TIME} unless the user supplied a clock. Not part of
   * {@link AsyncStore}: {@link RedisStore#concurrency} waits for it.
   */
  CompletableFuture<ConcurrencyResult> concurrency(ConcurrencyCall call) {
    String[] keys = {call.key()};
    String[] args = ConcurrencyScript.args(call, clockOverridden ? clock.nanos() : 0, clockOverridden);
    return script(ConcurrencyScript.SCRIPT, call.operation() != ConcurrencyOperation.PEEK, keys, args)
        .thenApply(ConcurrencyScript::result);
  }

  /**
   * A joint decision in one {@code EVALSHA} of {@code limiter.lua} over every limiter's key: the
   * script decides each at one instant without writing, then writes them all only if every one
   * allowed. On Cluster the keys must share a hash slot (a script runs on one node), so a joint
   * decision across slots is refused before anything is sent. The deny cache is neither asked
   * nor told: its denials are per key, and a joint refusal says nothing of one key alone.
   */
  @Override
  public CompletableFuture<Decision[]> limitAll(List<LimiterCall> calls, long permitsEach) {
    String[] keys = new String[calls.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = calls.get(i).key();
    }
    if (cluster) {
      requireOneSlot(keys, "a joint limiter decision",
          "limiters named like \"{tenant7}:user:42\", \"{tenant7}:tenant\" and \"{tenant7}:global\"");
    }
    long now = clock.nanos();
    return runLimiter(true, keys, at -> LimiterScript.jointArgs(calls, permitsEach, now, clockOverridden, at), now)
        .thenApply(reply -> LimiterScript.decisions(reply).toArray(new Decision[0]));
  }

  /**
   * Runs {@code limiter.lua} with the arguments {@code args} gives for quota boundaries around an
   * instant: first {@code now}, the client's clock; if the script decided further from it than
   * those boundaries reach ({@link ClockSkewException}: nothing was written), once more around
   * the instant it decided at.
   */
  private CompletableFuture<List<Object>> runLimiter(boolean write, String[] keys, LongFunction<String[]> args,
      long now) {
    return script(LimiterScript.SCRIPT, write, keys, args.apply(now))
        .exceptionallyCompose(failure -> {
          Throwable cause = RedisFailures.unwrap(failure);
          if (!(cause instanceof ClockSkewException skew)) {
            return CompletableFuture.failedFuture(RedisFailures.forLimiter(cause, keys[0]));
          }
          return script(LimiterScript.SCRIPT, write, keys, args.apply(skew.at))
              .exceptionallyCompose(again -> CompletableFuture.failedFuture(
                  RedisFailures.forLimiter(RedisFailures.unwrap(again), keys[0])));
        });
  }

  /**
   * An operation applied at most once per id: the id's record ({@link OperationKeys}) is checked
   * and written by the same script as the operation, in one round trip, so no lost reply or
   * crash can separate them. A repeat returns the first call's result from the record.
   */
  @Override
  public CompletableFuture<Object> applyOnce(OperationId id, Mutation mutation) {
    try {
      if (mutation instanceof Mutation.LimiterStep step) {
        return limitOnce(id, step);
      }
      String record = operationKeys.record(id, mutation.key());
      long now = clock.nanos();
      if (mutation instanceof Mutation.Incr m && m.create() && m.dflt() == 0) {
        String[] keys = {record, m.key()};
        return script(ONCE_INCR, keys, Long.toString(m.delta()),
            OperationKeys.hex(m.fingerprint()), Long.toString(operationKeys.pexpireMillis(clockOverridden)),
            clockOverridden ? Long.toString(now) : "-", clockOverridden ? Long.toString(operationKeys.expiry(now)) : "-")
            .thenApply(r -> OperationRecord.decode(first(r)).replay(id, mutation));
      }
      CounterScript s = new CounterScript().once(record, mutation.fingerprint(), shape(mutation),
          operationKeys.pexpireMillis(clockOverridden), clockOverridden ? Long.toString(now) : null,
          clockOverridden ? Long.toString(operationKeys.expiry(now)) : null);
      if (mutation instanceof Mutation.Incr m) {
        s.incr(m.key(), m.delta(), m.dflt(), m.create());
      } else if (mutation instanceof Mutation.IncrDouble m) {
        s.incrDouble(m.key(), m.delta(), m.dflt());
      } else if (mutation instanceof Mutation.Put m) {
        s.put(m.key(), m.value(), m.ttlNanos());
      } else if (mutation instanceof Mutation.Add m) {
        s.add(m.key(), m.value(), m.ttlNanos());
      } else if (mutation instanceof Mutation.Pop m) {
        if (m.integerOnly()) {
          s.popInteger(m.key());
        } else {
          s.pop(m.key());
        }
      } else if (mutation instanceof Mutation.Delete m) {
        s.delete(m.key());
      } else if (mutation instanceof Mutation.Touch m) {
        s.touch(m.key(), m.ttlNanos());
      } else if (mutation instanceof Mutation.Transact m) {
        if (cluster) {
          requireOneSlot(CounterScript.of(m.ops()).keys());
        }
        s.all(m.ops());
      } else {
        throw new IllegalArgumentException("no operation-id form for " + mutation);
      }
      return run(s).thenApply(r -> OperationRecord.decode(first(r)).replay(id, mutation));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** How the script's results read as the one result a record keeps (counters.lua's header). */
  private static String shape(Mutation m) {
    if (m instanceof Mutation.Put) {
      return "none";
    }
    if (m instanceof Mutation.Add || m instanceof Mutation.Delete || m instanceof Mutation.Touch) {
      return "bool";
    }
    return m instanceof Mutation.Transact ? "list" : "value";
  }

  /**
   * A limiter step under an id: always alone (never in a batch, never answered by the deny
   * cache, whose local answers would record nothing), with the record as the script's second key.
   */
  private CompletableFuture<Object> limitOnce(OperationId id, Mutation.LimiterStep step) {
    LimiterCall call = step.call();
    String key = call.key();
    LimiterOperation op = step.operation();
    boolean invalidates = denyCache != null && op != LimiterOperation.ACQUIRE && op != LimiterOperation.PEEK;
    if (invalidates) {
      denyCache.invalidate(key);
    }
    String[] keys = {key, operationKeys.record(id, key)};
    long now = clock.nanos();
    String fingerprint = OperationKeys.hex(step.fingerprint());
    long pexpire = operationKeys.pexpireMillis(clockOverridden);
    String nowText = clockOverridden ? Long.toString(now) : "-";
    String expText = clockOverridden ? Long.toString(operationKeys.expiry(now)) : "-";
    CompletableFuture<Object> result = runLimiter(true, keys, at -> LimiterScript.once(
        LimiterScript.args(call, op, step.permits(), now, clockOverridden, at), fingerprint, pexpire, nowText, expText), now)
        // applied now: the record, then the decision as a call without an id answers it
        .thenApply(r -> r.size() > 1 ? LimiterScript.decision(r.subList(1, r.size()))
            : OperationRecord.decode((String) r.get(0)).replay(id, step));
    if (invalidates) {
      result = result.whenComplete((r, failure) -> denyCache.invalidate(key));
    }
    return result;
  }

  /**
   * Runs {@code limiter.lua} once for a batch of acquisitions and peeks on one limiter (with the
   * clock-skew retry of {@link #runLimiter}: nothing was decided when it is refused).
   */
  private CompletableFuture<List<Object>> runBatch(List<LimiterBatches.Pending> batch) {
    LimiterBatches.Pending first = batch.get(0);
    String[] keys = {first.call().key()};
    long now = clock.nanos();
    if (batch.size() == 1) {
      return runLimiter(first.op() != LimiterOperation.PEEK, keys,
          at -> LimiterScript.args(first.call(), first.op(), first.permits(), now, false, at), now);
    }
    List<LimiterOperation> ops = new ArrayList<>(batch.size());
    List<Long> permits = new ArrayList<>(batch.size());
    for (LimiterBatches.Pending p : batch) {
      ops.add(p.op());
      permits.add(p.permits());
    }
    boolean write = ops.stream().anyMatch(op -> op != LimiterOperation.PEEK);
    return runLimiter(write, keys, at -> LimiterScript.batchArgs(first.call(), ops, permits, now, false, at), now);
  }

  /**
   * The deny cache's clock: the supplied clock when there is one (so tests can script it),
   * else the monotonic {@link System#nanoTime()}.
   */
  private long guardClock() {
    return clockOverridden ? clock.nanos() : System.nanoTime();
  }

  /** The deny cache, or null when it is off. */
  DenyCache denyCache() {
    return denyCache;
  }

  /**
   * A script runs on one Cluster node, so all its keys must hash to one slot. Hash tags make
   * that so: only the part in the first braces is hashed.
   */
  static void requireOneSlot(String[] keys) {
    requireOneSlot(keys, "a transaction",
        "tally.counters(\"{user42}\") or keys like \"{user42}:views\" and \"{user42}:clicks\"");
  }

  /** {@link #requireOneSlot(String[])} for {@code what}, with {@code example} of tagged keys. */
  static void requireOneSlot(String[] keys, String what, String example) {
    int slot = SlotHash.getSlot(keys[0]);
    for (String key : keys) {
      int other = SlotHash.getSlot(key);
      if (other != slot) {
        throw new IllegalArgumentException(what + " on Redis Cluster needs all its keys in one"
            + " hash slot, but '" + keys[0] + "' is in slot " + slot + " and '" + key + "' in slot "
            + other + ". Give the keys a common hash tag: only the part in braces is hashed, so "
            + example + " always share a slot");
      }
    }
  }
}
