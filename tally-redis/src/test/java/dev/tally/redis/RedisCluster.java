package dev.tally.redis;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Three Cluster primaries on free ports, slots split evenly by {@code CLUSTER ADDSLOTSRANGE} and
 * joined with {@code CLUSTER MEET}: the smallest real Cluster, ready once every node reports
 * {@code cluster_state:ok} and knows the other two. Over TLS ({@link #startTls}) the nodes also
 * talk to each other over TLS, and each keeps its plain port for the tests' own checks.
 */
final class RedisCluster implements AutoCloseable {
  private static final int SLOTS = 16384;

  final List<RedisServer> nodes = new ArrayList<>();
  /** Replicas ({@link #startWithReplica}): of the first node. */
  final List<RedisServer> replicas = new ArrayList<>();
  /** Where clients reach each node, and its cluster bus port, as CLUSTER MEET is told. */
  private final List<int[]> endpoints = new ArrayList<>();
  private final boolean tls;

  private RedisCluster(boolean tls) {
    this.tls = tls;
  }

  static RedisCluster start() {
    return start(false, () -> {
      RedisServer node = RedisServer.startClusterNode();
      return new Node(node, node.port(), node.port() + 10_000);
    });
  }

  /**
   * Nodes that take clients on a TLS port and gossip over TLS ({@code tls-cluster yes}), with the
   * server certificate and key given, trusting {@code ca} for the bus. Redis 7 tells a client that
   * asks over TLS the nodes' TLS ports, and one that asks in plain text their plain ports.
   */
  static RedisCluster startTls(Path cert, Path key, Path ca) {
    return start(true, () -> {
      int tlsPort = RedisServer.freePort();
      int busPort = RedisServer.freePort();
      RedisServer node = RedisServer.startClusterNode("--tls-port", Integer.toString(tlsPort),
          "--cluster-port", Integer.toString(busPort), "--tls-cluster", "yes", "--tls-cert-file", cert.toString(),
          "--tls-key-file", key.toString(), "--tls-ca-cert-file", ca.toString(), "--tls-auth-clients", "no");
      return new Node(node, tlsPort, busPort);
    });
  }

  private record Node(RedisServer server, int clientPort, int busPort) {}

  /**
   * The three primaries and a replica of the first, which the Cluster promotes when the first
   * fails (its nodes call a silent node failed after {@code nodeTimeoutMillis}).
   */
  static RedisCluster startWithReplica(int nodeTimeoutMillis) {
    String timeout = Integer.toString(nodeTimeoutMillis);
    RedisCluster cluster = start(false, () -> {
      RedisServer node = RedisServer.startClusterNode("--cluster-node-timeout", timeout);
      return new Node(node, node.port(), node.port() + 10_000);
    });
    try {
      RedisServer replica = RedisServer.startClusterNode("--cluster-node-timeout", timeout);
      cluster.replicas.add(replica);
      cluster.nodes.get(0).call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(replica.port()),
          Integer.toString(replica.port() + 10_000));
      String primaryId = (String) cluster.nodes.get(0).call("CLUSTER", "MYID");
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (true) {
        try {
          replica.call("CLUSTER", "REPLICATE", primaryId); // refused until the replica has heard of the primary
          break;
        } catch (RuntimeException notYet) {
          if (System.nanoTime() > deadline) {
            throw notYet;
          }
          RedisServer.sleep(50);
        }
      }
      while (!"up".equals(replica.info("replication").get("master_link_status"))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the replica did not sync with its primary");
        }
        RedisServer.sleep(50);
      }
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  /** Whether {@code server} is a primary, as the Cluster's node {@code asked} sees it now. */
  static boolean isPrimary(RedisServer asked, RedisServer server) {
    for (String line : ((String) asked.call("CLUSTER", "NODES")).lines().toList()) {
      String[] f = line.split(" ", -1);
      if (f.length > 2 && f[1].startsWith("127.0.0.1:" + server.port() + "@")) {
        return f[2].contains("master") && !f[2].contains("fail");
      }
    }
    return false;
  }

  private static RedisCluster start(boolean tls, Supplier<Node> startNode) {
    RedisCluster cluster = new RedisCluster(tls);
    try {
      for (int i = 0; i < 3; i++) {
        Node node = startNode.get();
        cluster.nodes.add(node.server());
        cluster.endpoints.add(new int[] {node.clientPort(), node.busPort()});
      }
      int n = cluster.nodes.size();
      for (int i = 0; i < n; i++) {
        int from = SLOTS * i / n;
        int to = SLOTS * (i + 1) / n - 1;
        cluster.nodes.get(i).call("CLUSTER", "ADDSLOTSRANGE", Integer.toString(from), Integer.toString(to));
      }
      for (int[] endpoint : cluster.endpoints.subList(1, n)) {
        cluster.nodes.get(0).call("CLUSTER", "MEET", "127.0.0.1", Integer.toString(endpoint[0]),
            Integer.toString(endpoint[1]));
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

  /** The store URI naming every node as a seed ({@code rediss-cluster://} and the TLS ports over TLS). */
  String uri() {
    return (tls ? "rediss-cluster://" : "redis-cluster://")
        + endpoints.stream().map(e -> "127.0.0.1:" + e[0]).collect(Collectors.joining(","));
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
    replicas.forEach(RedisServer::close);
    nodes.forEach(RedisServer::close);
  }
}
