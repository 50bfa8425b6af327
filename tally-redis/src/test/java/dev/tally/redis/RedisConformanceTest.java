package dev.tally.redis;

import dev.tally.Tally;
import dev.tally.tck.ConformanceSuite;
import dev.tally.tck.StoreConfiguration;
import java.util.List;
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
 *   <li><b>sentinel</b>: a primary and a replica found through a Sentinel.
 * </ul>
 *
 * Counter expiry is Redis' own, on its clock, so letting time pass sleeps through the kit's
 * 300 ms ttls ({@link StoreConfiguration#expiringOnServerClock()}). The default limiter path on the
 * server's clock (calls on one limiter sharing one script run) runs in
 * {@link ServerClockConformanceTest}, on a server whose clock the kit moves.
 */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
class RedisConformanceTest extends ConformanceSuite {
  RedisConformanceTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    return List.of(
        StoreConfiguration.of("redis standalone",
            clock -> Tally.builder(SharedServers.standalone().uri()).timeSource(clock).build())
            .expiringOnServerClock(),
        StoreConfiguration.of("redis standalone batch=false",
            clock -> Tally.builder(SharedServers.standalone().uri() + "/1?batch=false").timeSource(clock).build())
            .expiringOnServerClock(),
        StoreConfiguration.of("redis cluster",
            clock -> Tally.builder(SharedServers.cluster().uri()).timeSource(clock).build())
            .expiringOnServerClock()
            .groupNames(unique -> "{" + unique + "}"),
        StoreConfiguration.of("redis sentinel",
            clock -> Tally.builder(SharedServers.sentinel().uri("")).timeSource(clock).build())
            .expiringOnServerClock());
  }
}
