package dev.tally.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Runs {@link Script}s in one round trip: {@code EVALSHA}, and only if the server answers
 * {@code NOSCRIPT} (first use, a restart, {@code SCRIPT FLUSH}, a failover, a Cluster node that
 * never saw it) {@code EVAL} with the body, which also caches it there for the next call.
 *
 * <p>A script receives every key it touches in {@code KEYS}, so a Cluster routes it to the node
 * owning their slot. Anything atomic that Redis has no single command for is one script and one
 * call here. A rate limiter, for instance, is a {@code .lua} resource that reads the server
 * clock with {@code redis.call('TIME')} (or the time passed in {@code ARGV} when the user
 * supplied a clock) and decides and writes in the same step:
 *
 * <pre>{@code
 * static final Script TOKEN_BUCKET = Script.load("token-bucket.lua");
 * ScriptRunner.run(commands, TOKEN_BUCKET, ScriptOutputType.MULTI, new String[] {key}, capacity, refill, now);
 * }</pre>
 */
final class ScriptRunner {
  private ScriptRunner() {}

  /**
   * Runs {@code script} on {@code commands}; the stage fails with Lettuce's exception, untranslated
   * but for the lines of the script a Lua error names ({@link Script#locate}).
   */
  static <T> CompletableFuture<T> run(RedisClusterAsyncCommands<String, String> commands, Script script,
      ScriptOutputType type, String[] keys, String... args) {
    CompletableFuture<T> result = new CompletableFuture<>();
    commands.<T>evalsha(script.sha(), type, keys, args).whenComplete((value, failure) -> {
      if (failure == null) {
        result.complete(value);
      } else if (unwrap(failure) instanceof RedisNoScriptException) {
        commands.<T>eval(script.body(), type, keys, args).whenComplete((v, f) -> {
          if (f == null) {
            result.complete(v);
          } else {
            result.completeExceptionally(located(script, f));
          }
        });
      } else {
        result.completeExceptionally(located(script, failure));
      }
    });
    return result;
  }

  /** A Redis error naming lines of the script's whole text, as files and their own lines. */
  private static Throwable located(Script script, Throwable failure) {
    Throwable t = unwrap(failure);
    // only the plain error reply: its subclasses (NOSCRIPT, BUSY, ...) never name a line
    if (t.getClass() == RedisCommandExecutionException.class && t.getMessage() != null
        && t.getMessage().contains("user_script:")) {
      return new RedisCommandExecutionException(script.locate(t.getMessage()), t);
    }
    return failure;
  }

  private static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }
}
