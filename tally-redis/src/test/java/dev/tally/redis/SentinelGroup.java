package dev.tally.redis;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/**
 * A primary, its replica and one Sentinel watching them with quick failure detection (down
 * after 1 s), so a failover completes within a few seconds of the primary dying; or, from
 * {@link #start(int, int, int)}, more replicas and Sentinels. Over TLS
 * ({@link #startTls}) clients, replication and the Sentinel's own checks all use TLS ports, and
 * every server keeps its plain port for the tests' own checks.
 */
final class SentinelGroup implements AutoCloseable {
  static final String NAME = "tally";

  final RedisServer first;
  final RedisServer second;
  final RedisServer sentinel;
  /** Every data server, the first primary first. */
  final List<RedisServer> servers = new ArrayList<>();
  /** Every Sentinel, {@link #sentinel} first. */
  final List<RedisServer> sentinels = new ArrayList<>();
  /** The ports clients use: the TLS ports in a TLS group, else the servers' own. */
  private final int sentinelPort;
  private final boolean tls;

  private SentinelGroup(RedisServer first, RedisServer second, RedisServer sentinel, int sentinelPort, boolean tls) {
    this.first = first;
    this.second = second;
    this.sentinel = sentinel;
    this.sentinelPort = sentinelPort;
    this.tls = tls;
    servers.add(first);
    servers.add(second);
    sentinels.add(sentinel);
  }

  /**
   * A primary with {@code replicas} replicas, watched by {@code sentinelCount} Sentinels of
   * which a majority must agree to fail over, each calling the primary down after
   * {@code downAfterMillis}.
   */
  static SentinelGroup start(int replicas, int sentinelCount, int downAfterMillis) {
    List<RedisServer> started = new ArrayList<>();
    try {
      RedisServer first = RedisServer.start();
      started.add(first);
      for (int i = 0; i < replicas; i++) {
        started.add(RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(first.port())));
      }
      int quorum = sentinelCount / 2 + 1;
      List<RedisServer> watching = new ArrayList<>();
      for (int i = 0; i < sentinelCount; i++) {
        RedisServer s = RedisServer.startSentinel(NAME, first.port(), quorum, downAfterMillis);
        started.add(s);
        watching.add(s);
      }
      SentinelGroup group = new SentinelGroup(first, started.get(1), watching.get(0), watching.get(0).port(), false);
      group.servers.addAll(started.subList(2, replicas + 1));
      group.sentinels.addAll(watching.subList(1, watching.size()));
      group.awaitReplicaKnown();
      group.awaitEveryReplicaSynced();
      return group;
    } catch (RuntimeException e) {
      closeAll(started.toArray(RedisServer[]::new));
      throw e;
    }
  }

  /** Waits until every replica replicates and every Sentinel knows every replica and Sentinel. */
  private void awaitEveryReplicaSynced() {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (System.nanoTime() < deadline) {
      boolean ready = servers.subList(1, servers.size()).stream()
          .allMatch(r -> "up".equals(r.info("replication").get("master_link_status")));
      for (RedisServer s : sentinels) {
        ready &= s.call("SENTINEL", "REPLICAS", NAME) instanceof List<?> l && l.size() == servers.size() - 1;
        ready &= s.call("SENTINEL", "SENTINELS", NAME) instanceof List<?> l && l.size() == sentinels.size() - 1;
      }
      if (ready) {
        return;
      }
      RedisServer.sleep(100);
    }
    throw new IllegalStateException("the Sentinel group did not settle:\n" + sentinel.logTail());
  }

  /** The data server at {@code port}. */
  RedisServer server(int port) {
    return servers.stream().filter(s -> s.port() == port).findFirst()
        .orElseThrow(() -> new IllegalStateException("no server of the group on port " + port));
  }

  static SentinelGroup start() {
    RedisServer first = RedisServer.start();
    RedisServer second = null;
    RedisServer sentinel = null;
    try {
      second = RedisServer.start("--replicaof", "127.0.0.1", Integer.toString(first.port()));
      sentinel = RedisServer.startSentinel(NAME, first.port());
      return settled(new SentinelGroup(first, second, sentinel, sentinel.port(), false));
    } catch (RuntimeException e) {
      closeAll(first, second, sentinel);
      throw e;
    }
  }

  /**
   * The group over TLS, with the server certificate and key given and {@code ca} trusted: the
   * replica replicates over TLS ({@code tls-replication yes}), and the Sentinel watches the
   * primary's TLS port over TLS and names TLS ports to clients, who reach it on its TLS port.
   * Returns it with the client ports: the primary's, the replica's, the Sentinel's.
   */
  static SentinelGroup startTls(Path cert, Path key, Path ca) {
    List<String> tlsOptions = List.of("--tls-cert-file", cert.toString(), "--tls-key-file", key.toString(),
        "--tls-ca-cert-file", ca.toString(), "--tls-auth-clients", "no", "--tls-replication", "yes");
    int firstTls = RedisServer.freePort();
    int secondTls = RedisServer.freePort();
    int sentinelTls = RedisServer.freePort();
    RedisServer first = null;
    RedisServer second = null;
    RedisServer sentinel = null;
    try {
      first = RedisServer.start(with(tlsOptions, "--tls-port", Integer.toString(firstTls)));
      second = RedisServer.start(with(tlsOptions, "--tls-port", Integer.toString(secondTls), "--replicaof",
          "127.0.0.1", Integer.toString(firstTls)));
      sentinel = RedisServer.startSentinel(NAME, firstTls, "tls-port " + sentinelTls, "tls-cert-file " + cert,
          "tls-key-file " + key, "tls-ca-cert-file " + ca, "tls-auth-clients no", "tls-replication yes");
      return settled(new SentinelGroup(first, second, sentinel, sentinelTls, true));
    } catch (RuntimeException e) {
      closeAll(first, second, sentinel);
      throw e;
    }
  }

  private static String[] with(List<String> options, String... more) {
    return Stream.concat(options.stream(), Arrays.stream(more)).toArray(String[]::new);
  }

  private static SentinelGroup settled(SentinelGroup group) {
    group.awaitReplicaKnown();
    return group;
  }

  private static void closeAll(RedisServer... servers) {
    for (RedisServer server : servers) {
      if (server != null) {
        server.close();
      }
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

  /** The port of the primary as the Sentinel names it now (its TLS port in a TLS group). */
  int primaryPort() {
    List<?> address = (List<?>) sentinel.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME);
    return Integer.parseInt((String) address.get(1));
  }

  /** The store URI: the Sentinel and the group's name. */
  String uri(String options) {
    return (tls ? "rediss-sentinel://" : "redis-sentinel://") + "127.0.0.1:" + sentinelPort + "/0?sentinelMasterId="
        + NAME + options;
  }

  @Override
  public void close() {
    closeAll(sentinels.toArray(RedisServer[]::new));
    closeAll(servers.toArray(RedisServer[]::new));
  }
}
