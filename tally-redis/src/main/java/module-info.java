/** The Redis store ({@code redis:}, {@code rediss:}, {@code redis-sentinel:}, {@code redis-cluster:}). */
module dev.tally.redis {
  requires dev.tally;
  requires lettuce.core;
  requires io.netty.common;
  requires io.netty.transport;
  requires reactor.core;

  provides dev.tally.spi.StoreProvider with dev.tally.redis.RedisStoreProvider;
}
