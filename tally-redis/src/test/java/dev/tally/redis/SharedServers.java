package dev.tally.redis;

/**
 * The standalone server and the Cluster that the conformance suites share, started on first use
 * and killed when the JVM exits. Each test works under its own group prefix, so sharing is safe.
 * Tests that kill or pause servers start their own.
 */
final class SharedServers {
  private static RedisServer standalone;
  private static RedisCluster cluster;
  private static SentinelGroup sentinel;

  private SharedServers() {}

  static synchronized RedisServer standalone() {
    if (standalone == null) {
      standalone = RedisServer.start();
    }
    return standalone;
  }

  static synchronized SentinelGroup sentinel() {
    if (sentinel == null) {
      sentinel = SentinelGroup.start(1, 1, 10_000); // no failover from the kit's 4 s freeze
    }
    return sentinel;
  }

  static synchronized RedisCluster cluster() {
    if (cluster == null) {
      cluster = RedisCluster.start();
    }
    return cluster;
  }
}
