package dev.tally.redis;

import dev.tally.Tally;
import dev.tally.tck.ConformanceSuite;
import dev.tally.tck.StoreConfiguration;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The whole kit on the production path: no clock supplied, so the limiter script decides at
 * Redis' {@code TIME} and concurrent calls on one limiter share one script run
 * ({@link LimiterBatches}), and operation ids lapse by Redis' own expiry. The server's wall
 * clock follows the kit's ({@link ServerClock}), so counters expire when the kit moves its clock,
 * without sleeping. The client's own clock stays real, weeks from the kit's: quota calls meet the
 * clock-skew retry on every call. Redis' {@code TIME} has a microsecond's grain, so the two cases
 * that need decisions to the nanosecond, or instants the client computes on its own clock, are
 * skipped here ({@link StoreConfiguration#onServerClock}); they run in {@link RedisConformanceTest}.
 */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
class ServerClockConformanceTest extends ConformanceSuite {
  ServerClockConformanceTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    return List.of(StoreConfiguration.of("redis server clock (default limiter path)", clock -> {
      ServerClock server = ServerClock.shared();
      server.follow(clock);
      return Tally.open(server.server().uri());
    }).onServerClock(Duration.ofNanos(1_000)));
  }
}
