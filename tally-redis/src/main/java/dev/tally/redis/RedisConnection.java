package dev.tally.redis;

import dev.tally.StoreUnavailableException;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.protocol.ConnectionIntent;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/**
 * The one Lettuce connection a store shares between all its callers, with the client settings
 * that keep callers from ever hanging.
 *
 * <p>A Lettuce connection is thread-safe and pipelines: concurrent callers' commands are written
 * back to back on the same socket and the replies matched in order, so one connection carries
 * the whole process's load without a pool. For a Cluster it is one logical connection that
 * opens a socket per node and routes each command by its key's hash slot.
 *
 * <h2>Failure behaviour</h2>
 * <ul>
 *   <li>Every command has a fixed timeout: no reply in time completes it with a timeout.
 *   <li>While disconnected, commands are refused at once ({@code REJECT_COMMANDS}) instead of
 *       queueing, and commands in flight when the connection dropped are failed, not replayed
 *       after the reconnect. Replaying would apply an {@code INCRBY} twice if Redis had
 *       executed it before the connection broke; failing it instead leaves the caller an
 *       "unavailable, may have applied" error, which is honest and at most once.
 *   <li>Reconnection runs in the background with an exponential delay capped at one second,
 *       so work resumes by itself within about a second of Redis coming back.
 *   <li>RESP2 is pinned: Lua {@code false} then always means nil, whatever the server version.
 * </ul>
 */
final class RedisConnection implements AutoCloseable {
  private static final Delay RECONNECT_DELAY =
      Delay.exponential(Duration.ofMillis(5), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS);

  private final ClientResources resources;
  private final AbstractRedisClient client;
  private final StatefulConnection<String, String> connection;
  private final RedisClusterAsyncCommands<String, String> commands;
  private final boolean cluster;
  private final Duration timeout;

  private RedisConnection(ClientResources resources, AbstractRedisClient client,
      StatefulConnection<String, String> connection, RedisClusterAsyncCommands<String, String> commands,
      boolean cluster, Duration timeout) {
    this.resources = resources;
    this.client = client;
    this.connection = connection;
    this.commands = commands;
    this.cluster = cluster;
    this.timeout = timeout;
  }

  /**
   * Connects, or throws {@link StoreUnavailableException} if no server answers within the
   * timeout.
   */
  static RedisConnection open(RedisSettings settings) {
    ClientResources resources = ClientResources.builder().reconnectDelay(RECONNECT_DELAY).build();
    SocketOptions socket = SocketOptions.builder().connectTimeout(settings.timeout).keepAlive(true).build();
    TimeoutOptions timeouts = TimeoutOptions.builder().fixedTimeout(settings.timeout).build();
    AbstractRedisClient client = null;
    try {
      if (settings.topology == RedisSettings.Topology.CLUSTER) {
        RedisClusterClient c = RedisClusterClient.create(resources, settings.uris);
        client = c;
        c.setOptions(ClusterClientOptions.builder()
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .protocolVersion(ProtocolVersion.RESP2)
            .socketOptions(socket)
            .sslOptions(ssl(settings))
            .timeoutOptions(timeouts)
            // adaptive refresh (MOVED, ASK, reconnects, uncovered slots) is on by default
            .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                .enablePeriodicRefresh(Duration.ofSeconds(30))
                .build())
            .build());
        StatefulRedisClusterConnection<String, String> conn = c.connect(StringCodec.UTF8);
        connectToEveryPrimary(conn);
        return new RedisConnection(resources, c, conn, conn.async(), true, settings.timeout);
      }
      RedisClient c = RedisClient.create(resources);
      client = c;
      c.setOptions(ClientOptions.builder()
          .autoReconnect(true)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .protocolVersion(ProtocolVersion.RESP2)
          .socketOptions(socket)
          .sslOptions(ssl(settings))
          .timeoutOptions(timeouts)
          .build());
      StatefulRedisConnection<String, String> conn = c.connect(StringCodec.UTF8, settings.uris.get(0));
      return new RedisConnection(resources, c, conn, conn.async(), false, settings.timeout);
    } catch (RedisException e) {
      if (client != null) {
        client.shutdown(Duration.ZERO, settings.timeout);
      }
      resources.shutdown(0, settings.timeout.toMillis(), TimeUnit.MILLISECONDS);
      throw new StoreUnavailableException("cannot connect to Redis (" + settings + "): " + why(e), e);
    }
  }

  /**
   * Lettuce's message and, when it differs, the root cause's: "Unable to connect to host:port"
   * alone does not tell a refused connection from a certificate nobody trusts.
   */
  private static String why(RedisException e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String why = String.valueOf(e.getMessage());
    if (root != e && root.getMessage() != null && !why.contains(root.getMessage())) {
      why += ": " + root.getMessage();
    }
    if (root instanceof GeneralSecurityException || root instanceof SSLException) {
      why += " (TLS: see the options caCert, verifyPeer, clientCert and clientKey in docs/redis.md)";
    }
    return why;
  }

  /** The trust and the client certificate of the URI's TLS options (unused without TLS). */
  private static SslOptions ssl(RedisSettings settings) {
    SslOptions.Builder ssl = SslOptions.builder().jdkSslProvider().handshakeTimeout(settings.timeout);
    if (settings.caCert != null) {
      ssl.trustManager(settings.caCert.toFile());
    }
    if (settings.clientCert != null) {
      ssl.keyManager(settings.clientCert.toFile(), settings.clientKey.toFile(), null);
    }
    return ssl.build();
  }

  /**
   * Opens the socket to each primary now. Lettuce opens them on first use, and a command that
   * meets a socket still opening is refused under {@code REJECT_COMMANDS}: without this the
   * first command to each node would fail. (A primary that appears later, after a failover or
   * a resharding, costs its first command the same.)
   */
  private static void connectToEveryPrimary(StatefulRedisClusterConnection<String, String> conn) {
    for (RedisClusterNode node : conn.getPartitions()) {
      if (node.is(RedisClusterNode.NodeFlag.UPSTREAM)) {
        conn.getConnection(node.getUri().getHost(), node.getUri().getPort(), ConnectionIntent.WRITE);
      }
    }
  }

  /** The asynchronous commands, routed by key on a Cluster. */
  RedisClusterAsyncCommands<String, String> commands() {
    return commands;
  }

  boolean cluster() {
    return cluster;
  }

  Duration timeout() {
    return timeout;
  }

  @Override
  public void close() {
    try {
      connection.close();
    } finally {
      client.shutdown(Duration.ZERO, timeout);
      resources.shutdown(0, timeout.toMillis(), TimeUnit.MILLISECONDS);
    }
  }
}
