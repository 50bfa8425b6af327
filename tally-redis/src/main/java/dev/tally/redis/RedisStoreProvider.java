package dev.tally.redis;

import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.Set;

/**
 * Opens Redis stores: {@code redis://host:6379/0}, {@code rediss://} (TLS),
 * {@code redis-sentinel://host:26379,host:26380/0?sentinelMasterId=mymaster} and
 * {@code redis-cluster://host:7000,host:7001}, each with an optional {@code ?timeout=2s}.
 *
 * <pre>{@code
 * try (Tally tally = Tally.open("redis://localhost:6379/0")) {
 *   tally.counters("views").incr("episode:512");   // INCRBY views:episode:512 1
 * }
 * }</pre>
 *
 * <p>Counters are plain Redis strings that {@code redis-cli} reads and {@code INCRBY} updates;
 * expiry runs on the Redis server's clock, whatever clock the {@link StoreContext} carries. A
 * store holds one pipelined connection shared by all threads. See {@code docs/redis.md}.
 */
public final class RedisStoreProvider implements StoreProvider {

  /** Creates the provider; {@link java.util.ServiceLoader} calls this. */
  public RedisStoreProvider() {}

  @Override
  public Set<String> schemes() {
    return RedisSettings.SCHEMES;
  }

  @Override
  public Store open(String uri, StoreContext context) {
    RedisSettings settings = RedisSettings.parse(uri);
    return new RedisStore(uri, RedisConnection.open(settings), context, settings);
  }
}
