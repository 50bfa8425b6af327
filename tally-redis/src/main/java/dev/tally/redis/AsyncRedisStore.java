package dev.tally.redis;

import dev.tally.Decision;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import io.lettuce.core.GetExArgs;
import io.lettuce.core.KeyScanArgs;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
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

/**
 * Counters on Redis, natively asynchronous: every operation is one Lettuce command, or one
 * {@code EVALSHA} of {@code counters.lua}, on the shared pipelined connection.
 *
 * <table>
 *   <caption>One round trip per operation</caption>
 *   <tr><th>operation</th><th>Redis</th></tr>
 *   <tr><td>incr, default 0</td><td>{@code INCRBY} (keeps the expiry, refuses overflow and floats by itself)</td></tr>
 *   <tr><td>incr with another default, incrExisting, floating incr</td><td>{@code EVALSHA counters.lua}</td></tr>
 *   <tr><td>get</td><td>{@code GET}</td></tr>
 *   <tr><td>put</td><td>{@code SET [PX]}</td></tr>
 *   <tr><td>add</td><td>{@code SET NX [PX]}</td></tr>
 *   <tr><td>pop (integer)</td><td>{@code EVALSHA counters.lua}: a floating counter must stay</td></tr>
 *   <tr><td>popDouble</td><td>{@code GETDEL}</td></tr>
 *   <tr><td>delete</td><td>{@code DEL}</td></tr>
 *   <tr><td>touch</td><td>{@code GETEX PX} / {@code GETEX PERSIST} (answers whether the key was live)</td></tr>
 *   <tr><td>ttl</td><td>{@code PTTL}</td></tr>
 *   <tr><td>keys</td><td>{@code SCAN MATCH TYPE string} on every primary</td></tr>
 *   <tr><td>transaction</td><td>{@code EVALSHA counters.lua} with every key</td></tr>
 * </table>
 *
 * <p>Expiry is Redis' own ({@code PX}, on the server clock). Stages complete on Lettuce's I/O
 * threads: continuations that block must move elsewhere ({@code thenApplyAsync}).
 */
final class AsyncRedisStore implements AsyncStore {
  private final RedisClusterAsyncCommands<String, String> commands;
  private final ScriptRunner scripts;
  private final boolean cluster;
  private final Duration timeout;

  AsyncRedisStore(RedisConnection connection) {
    this.commands = connection.commands();
    this.scripts = new ScriptRunner(commands);
    this.cluster = connection.cluster();
    this.timeout = connection.timeout();
  }

  /** Completes with {@code map(value)}, or with the Tally exception for the failure. */
  private <T, R> CompletableFuture<R> call(CompletionStage<T> command, String[] keys, Function<T, R> map) {
    return command.toCompletableFuture().handle((value, failure) -> {
      if (failure != null) {
        throw RedisFailures.translate(failure, keys, timeout);
      }
      return map.apply(value);
    });
  }

  private <T, R> CompletableFuture<R> call(CompletionStage<T> command, String key, Function<T, R> map) {
    return call(command, new String[] {key}, map);
  }

  /** Runs {@code counters.lua} and returns its list of results, one per operation. */
  private CompletableFuture<List<Object>> run(CounterScript s) {
    String[] keys = s.keys();
    return call(scripts.<List<Object>>run(CounterScript.SCRIPT, ScriptOutputType.MULTI, keys, s.args()),
        keys, Function.identity());
  }

  private static String first(List<Object> results) {
    return (String) results.get(0);
  }

  @Override
  public CompletableFuture<Long> incr(String key, long delta, long dflt, boolean create) {
    if (create && dflt == 0) {
      return call(commands.incrby(key, delta), key, Function.identity());
    }
    return run(new CounterScript().incr(key, delta, dflt, create)).thenApply(r -> Long.parseLong(first(r)));
  }

  @Override
  public CompletableFuture<Double> incrDouble(String key, double delta, double dflt) {
    return run(new CounterScript().incrDouble(key, delta, dflt)).thenApply(r -> Double.parseDouble(first(r)));
  }

  @Override
  public CompletableFuture<Number> get(String key) {
    return call(commands.get(key), key, v -> CounterValues.decode(key, v));
  }

  @Override
  public CompletableFuture<Void> put(String key, Number value, long ttlNanos) {
    SetArgs args = ttlNanos == Store.NO_TTL ? null : SetArgs.Builder.px(CounterScript.millis(ttlNanos));
    String v = CounterValues.encode(value);
    return call(args == null ? commands.set(key, v) : commands.set(key, v, args), key, ok -> null);
  }

  @Override
  public CompletableFuture<Boolean> add(String key, Number value, long ttlNanos) {
    SetArgs args = SetArgs.Builder.nx();
    if (ttlNanos != Store.NO_TTL) {
      args.px(CounterScript.millis(ttlNanos));
    }
    return call(commands.set(key, CounterValues.encode(value), args), key, ok -> ok != null);
  }

  @Override
  public CompletableFuture<Number> pop(String key, boolean integerOnly) {
    if (integerOnly) {
      return run(new CounterScript().popInteger(key)).thenApply(r -> CounterValues.decode(key, first(r)));
    }
    return call(commands.getdel(key), key, v -> CounterValues.decode(key, v));
  }

  @Override
  public CompletableFuture<Boolean> delete(String key) {
    return call(commands.del(key), key, n -> n > 0);
  }

  @Override
  public CompletableFuture<Boolean> touch(String key, long ttlNanos) {
    GetExArgs args = ttlNanos == Store.NO_TTL
        ? new GetExArgs().persist() : new GetExArgs().px(CounterScript.millis(ttlNanos));
    return call(commands.getex(key, args), key, v -> v != null);
  }

  @Override
  public CompletableFuture<Long> ttl(String key) {
    return call(commands.pttl(key), key, ms -> ms == -2 ? Store.TTL_MISSING
        : ms == -1 ? Store.TTL_PERMANENT : ms * 1_000_000);
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
    return call(commands.scan(cursor, args), described, Function.identity()).thenCompose(page -> {
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
   * Rate limiters on Redis are not written yet. Each will be one {@code .lua} resource run by
   * {@link ScriptRunner} in one {@code EVALSHA}, reading the server's {@code TIME} (or the
   * supplied clock's time passed in {@code ARGV} when the user set one).
   */
  @Override
  public CompletableFuture<Decision> limit(LimiterCall call, LimiterOperation operation, long permits) {
    return CompletableFuture.failedFuture(new UnsupportedOperationException(
        "the Redis store has counters only so far; its rate limiters are not written yet"));
  }

  /**
   * A script runs on one Cluster node, so all its keys must hash to one slot. Hash tags make
   * that so: only the part in the first braces is hashed.
   */
  static void requireOneSlot(String[] keys) {
    int slot = SlotHash.getSlot(keys[0]);
    for (String key : keys) {
      int other = SlotHash.getSlot(key);
      if (other != slot) {
        throw new IllegalArgumentException("a transaction on Redis Cluster needs all its keys in one"
            + " hash slot, but '" + keys[0] + "' is in slot " + slot + " and '" + key + "' in slot "
            + other + ". Give the keys a common hash tag: only the part in braces is hashed, so"
            + " tally.counters(\"{user42}\") or keys like \"{user42}:views\" and \"{user42}:clicks\""
            + " always share a slot");
      }
    }
  }
}
