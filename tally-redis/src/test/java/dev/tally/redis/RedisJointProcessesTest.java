package dev.tally.redis;

import dev.tally.tck.JointDecisionProcessesContract;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Joint decisions from three JVMs on the shared standalone server and on the shared Cluster. On
 * the Cluster one decision runs as one script on one node, so its keys must share a slot: the
 * kit names every limiter of the run under one hash tag, since the run's sets overlap (every
 * set holds the global limiter). Each run's tag is its own, so runs do not meet.
 */
@ParameterizedClass(name = "{0}")
@MethodSource("servers")
class RedisJointProcessesTest extends JointDecisionProcessesContract {
  private final Supplier<String> uri;

  RedisJointProcessesTest(String name, Supplier<String> uri) {
    this.uri = uri;
  }

  static List<Object[]> servers() {
    return List.of(
        new Object[] {"redis standalone", (Supplier<String>) () -> SharedServers.standalone().uri()},
        new Object[] {"redis cluster", (Supplier<String>) () -> SharedServers.cluster().uri()});
  }

  @Override
  protected String uri() {
    return uri.get();
  }
}
