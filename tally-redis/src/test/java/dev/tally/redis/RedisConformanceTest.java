package dev.tally.redis;

import dev.tally.Tally;
import dev.tally.tck.ConformanceSuite;
import dev.tally.tck.ServerFreeze;
import dev.tally.tck.StoreConfiguration;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The whole kit on every Redis configuration that takes a code path of its own:
 *
 * <ul>
 *   <li><b>standalone</b>: the defaults on one server (shared {@code INCRBY}s for concurrent
 *       increments, the limiter decided at the kit's clock, which the store passes to its script
 *       because the clock was supplied);
 *   <li><b>standalone batch=false</b>: every increment its own {@code INCRBY} (in database 1, since
 *       operation ids are one space per database and the kit reuses one fixed id);
 *   <li><b>cluster</b>: three primaries; each test's group is a hash tag, {@code {tck-1234abcd}},
 *       so its keys share a slot and its transactions can run, while the kit's other groups and its
 *       limiters spread over all three primaries;
 *   <li><b>sentinel</b>: a primary and a replica found through a Sentinel;
 *   <li><b>sentinel replicas=1</b>: the same, every write confirmed by the replica ({@code WAIT}).
 * </ul>
 *
 * Each is frozen under load by the kit's server-fault case ({@code SIGSTOP} for 4 s against the
 * 2 s timeout).
 *
 * Counter expiry is Redis' own, on its clock, so letting time pass sleeps through the kit's
 * 300 ms ttls ({@link StoreConfiguration#expiringOnServerClock()}). The default limiter path on the
 * server's clock (calls on one limiter sharing one script run) runs in
 * {@link ServerClockConformanceTest}, on a server whose clock the kit moves.
 */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
class RedisConformanceTest extends ConformanceSuite {
  private static final Duration TIMEOUT = RedisSettings.DEFAULT_TIMEOUT;
  private static final Duration FREEZE = Duration.ofSeconds(4);

  RedisConformanceTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    ServerFreeze standalone = freezing(() -> List.of(SharedServers.standalone()));
    ServerFreeze sentinelPrimary = freezing(() -> {
      SentinelGroup group = SharedServers.sentinel();
      return List.of(group.server(group.primaryPort()));
    });
    return List.of(
        StoreConfiguration.of("redis standalone",
            clock -> Tally.builder(SharedServers.standalone().uri()).timeSource(clock).build())
            .expiringOnServerClock()
            .freezable(TIMEOUT, FREEZE, standalone),
        StoreConfiguration.of("redis standalone batch=false",
            clock -> Tally.builder(SharedServers.standalone().uri() + "/1?batch=false").timeSource(clock).build())
            .expiringOnServerClock()
            .freezable(TIMEOUT, FREEZE, standalone),
        StoreConfiguration.of("redis cluster",
            clock -> Tally.builder(SharedServers.cluster().uri()).timeSource(clock).build())
            .expiringOnServerClock()
            .groupNames(unique -> "{" + unique + "}")
            .freezable(TIMEOUT, FREEZE, freezing(() -> SharedServers.cluster().nodes)),
        StoreConfiguration.of("redis sentinel",
            clock -> Tally.builder(SharedServers.sentinel().uri("")).timeSource(clock).build())
            .expiringOnServerClock()
            .freezable(TIMEOUT, FREEZE, sentinelPrimary),
        StoreConfiguration.of("redis sentinel replicas=1",
            clock -> Tally.builder(SharedServers.sentinel().uri("&replicas=1")).timeSource(clock).build())
            .expiringOnServerClock()
            .freezable(TIMEOUT, FREEZE, sentinelPrimary));
  }

  /**
   * Freezes every server {@code servers} names at the moment of the freeze (a Cluster's nodes all
   * at once, so that none is failed over: the shared Cluster has no replicas). The shared Sentinel
   * group calls its primary down only after 10 s, longer than the freeze: the kit's freeze never
   * causes a failover there, which {@link SentinelFaultTest} brings about on a group of its own.
   */
  private static ServerFreeze freezing(Supplier<List<RedisServer>> servers) {
    return new ServerFreeze() {
      private List<RedisServer> frozen = List.of();

      @Override
      public void freeze() {
        frozen = servers.get();
        frozen.forEach(RedisServer::pause);
      }

      @Override
      public void resume() {
        frozen.forEach(RedisServer::resume);
      }
    };
  }
}
