package dev.tally.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.concurrent.ExecutionException;

/**
 * The token bucket of the seed {@code redisbucket.py} (redis-py, WATCH/MULTI/EXEC), ported line
 * for line to Java and Lettuce for the comparison: two keys per bucket ({@code key:available},
 * {@code key:ts}) holding floats, the client's clock ({@code time.time()}), and a retry loop
 * that starts over whenever {@code EXEC} reports that a watched key changed ({@code WatchError}).
 *
 * <p>Round trips per attempt, as redis-py makes them: {@code WATCH}, {@code WATCH}, {@code GET},
 * {@code GET} (the second only when the bucket exists), then {@code MULTI SET EXPIRE SET EXPIRE
 * EXEC} buffered and sent together. {@code WATCH} belongs to a connection, so every thread needs
 * its own: {@link #forThread}.
 */
final class SeedTokenBucket implements AutoCloseable {
  static final long TIMEOUT = 60 * 60;

  private final double rate;
  private final double dflt;
  private final StatefulRedisConnection<String, String> connection;
  private final RedisCommands<String, String> r;
  private final RedisAsyncCommands<String, String> pipe;
  /** Attempts made (one more than the WatchErrors met), for the report. */
  long attempts;

  private SeedTokenBucket(RedisClient client, double rate, double dflt) {
    this.rate = rate;
    this.dflt = dflt;
    this.connection = client.connect();
    this.r = connection.sync();
    this.pipe = connection.async();
  }

  /** A bucket client with a connection of its own: RATE tokens per second, DEFAULT capacity. */
  static SeedTokenBucket forThread(RedisClient client, double rate, double dflt) {
    return new SeedTokenBucket(client, rate, dflt);
  }

  /** Return true or false based on whether the bucket {@code key} can consume {@code tokens}. */
  boolean tokenBucket(double tokens, String key) throws InterruptedException {
    boolean consumes;
    while (true) {
      attempts++;
      // set a watch on available tokens and previous timestamp
      r.watch(key + ":available");
      r.watch(key + ":ts");

      double currentTs = System.currentTimeMillis() / 1000.0;

      // get the current amount of tokens in the users bucket
      String oldTokens = r.get(key + ":available");
      double currentTokens;
      if (oldTokens == null) {
        currentTokens = dflt;
      } else {
        // else the user does have a value for tokens so we will increment them
        String oldTs = r.get(key + ":ts");
        currentTokens = Double.parseDouble(oldTokens) + Math.min(
            (currentTs - Double.parseDouble(oldTs)) * rate,
            dflt - Double.parseDouble(oldTokens));
      }

      // now we do the actual consumption of tokens
      if (0 <= tokens && tokens <= currentTokens) {
        currentTokens -= tokens;
        consumes = true;
      } else {
        consumes = false;
      }

      // put the pipeline back into buffered mode with MULTI and set the new values
      pipe.multi();
      pipe.set(key + ":available", Double.toString(currentTokens));
      pipe.expire(key + ":available", TIMEOUT);
      pipe.set(key + ":ts", Double.toString(currentTs));
      pipe.expire(key + ":ts", TIMEOUT);
      RedisFuture<TransactionResult> execute = pipe.exec();
      TransactionResult result;
      try {
        result = execute.get();
      } catch (ExecutionException e) {
        throw new IllegalStateException(e.getCause());
      }
      if (!result.wasDiscarded()) {
        break;
      }
      // a WatchError: somebody modified the bucket between the start and the end of the
      // transaction, so try again
    }
    return consumes;
  }

  @Override
  public void close() {
    connection.close();
  }
}
