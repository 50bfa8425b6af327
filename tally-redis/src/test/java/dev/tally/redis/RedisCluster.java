package dev.tally.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Three Cluster primaries on free ports, slots split evenly by {@code CLUSTER ADDSLOTSRANGE} and
 * joined with {@code CLUSTER MEET}: the smallest real Cluster, ready once every node reports
 * {@code cluster_state:ok} and knows the other two.
 */
final class RedisCluster implements AutoCloseable {
  private static final int SLOTS = 16384;

  final List<RedisServer> nodes = new ArrayList<>();

  static RedisCluster start() {
    RedisCluster cluster = new RedisCluster();
    try {
      for (int i = 0; i < 3; i++) {
        cluster.nodes.add(RedisServer.startClusterNode());
      }
      int n = cluster.nodes.size();
      for (int i = 0; i < n; i++) {
        int from = SLOTS * i / n;
        int to = SLOTS * (i + 1) / n - 1;
        cluster.nodes.get(i).call("CLUSTER", "ADDSLOTSRANGE", Integer.toString(from), Integer.toString(to));
      }
      for (RedisServer node : cluster.nodes.subList(1, n)) {
        cluster.nodes.get(0).call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(node.port()));
      }
      cluster.awaitReady();
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  private void awaitReady() {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (true) {
      boolean ready = true;
      for (RedisServer node : nodes) {
        Map<String, String> info = clusterInfo(node);
        ready &= "ok".equals(info.get("cluster_state"))
            && Integer.toString(nodes.size()).equals(info.get("cluster_known_nodes"))
            && Integer.toString(SLOTS).equals(info.get("cluster_slots_ok"));
      }
      if (ready) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the test cluster did not become ready: "
            + nodes.stream().map(n -> n.port() + "=" + clusterInfo(n).get("cluster_state")).toList());
      }
      RedisServer.sleep(50);
    }
  }

  private static Map<String, String> clusterInfo(RedisServer node) {
    return ((String) node.call("CLUSTER", "INFO")).lines()
        .filter(l -> l.contains(":"))
        .collect(Collectors.toMap(l -> l.substring(0, l.indexOf(':')), l -> l.substring(l.indexOf(':') + 1).trim()));
  }

  /** The store URI naming every node as a seed. */
  String uri() {
    return "redis-cluster://" + nodes.stream().map(n -> "127.0.0.1:" + n.port()).collect(Collectors.joining(","));
  }

  /** The node that serves {@code key}'s slot. */
  RedisServer nodeFor(String key) {
    long slot = (Long) nodes.get(0).call("CLUSTER", "KEYSLOT", key);
    int n = nodes.size();
    for (int i = 0; i < n; i++) {
      if (slot <= SLOTS * (i + 1) / n - 1) {
        return nodes.get(i);
      }
    }
    throw new IllegalStateException("slot " + slot);
  }

  @Override
  public void close() {
    nodes.forEach(RedisServer::close);
  }
}
