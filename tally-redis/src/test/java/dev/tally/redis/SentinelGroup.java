package dev.tally.redis;

import java.util.List;

/**
 * A primary, its replica and one Sentinel watching them with quick failure detection (down
 * after 1 s), so a failover completes within a few seconds of the primary dying.
 */
final class SentinelGroup implements AutoCloseable {
  static final String NAME = "tally";

  final RedisServer first;
  final RedisServer second;
  final RedisServer sentinel;

  private SentinelGroup(RedisServer first, RedisServer second, RedisServer sentinel) {
    this.first = first;
    this.second = second;
    this.sentinel = sentinel;
  }

  static SentinelGroup start() {
    RedisServer first = RedisServer.start();
    RedisServer second = null;
    RedisServer sentinel = null;
    try {
      second = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(first.port()));
      sentinel = RedisServer.startSentinel(NAME, first.port());
      SentinelGroup group = new SentinelGroup(first, second, sentinel);
      group.awaitReplicaKnown();
      return group;
    } catch (RuntimeException e) {
      first.close();
      if (second != null) {
        second.close();
      }
      if (sentinel != null) {
        sentinel.close();
      }
      throw e;
    }
  }

  /** Waits until the replica is in sync and the Sentinel lists it, so a failover can pick it. */
  private void awaitReplicaKnown() {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (System.nanoTime() < deadline) {
      boolean synced = "up".equals(second.info("replication").get("master_link_status"));
      Object replicas = sentinel.call("SENTINEL", "REPLICAS", NAME);
      if (synced && replicas instanceof List<?> list && !list.isEmpty()) {
        return;
      }
      RedisServer.sleep(100);
    }
    throw new IllegalStateException("the Sentinel group did not settle:\n" + sentinel.logTail());
  }

  /** The port of the primary as the Sentinel names it now. */
  int primaryPort() {
    List<?> address = (List<?>) sentinel.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME);
    return Integer.parseInt((String) address.get(1));
  }

  /** The store URI: the Sentinel and the group's name. */
  String uri(String options) {
    return "redis-sentinel://127.0.0.1:" + sentinel.port() + "/0?sentinelMasterId=" + NAME + options;
  }

  @Override
  public void close() {
    sentinel.close();
    second.close();
    first.close();
  }
}
