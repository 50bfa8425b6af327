package dev.tally.redis;

import dev.tally.StoreUnavailableException;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisURI;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
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
 *   <li>Through Sentinel, a link that times out or meets a replica is dropped and the primary
 *       found afresh ({@link SentinelFollower}); on a Cluster, a timeout refreshes the topology,
 *       so a primary frozen past its replica's promotion is left within the timeout.
 *   <li>With {@code ?replicas=n}, a write is acknowledged only once {@code n} replicas hold it
 *       ({@link ReplicaAcks}).
 * </ul>
 */
final class RedisConnection implements AutoCloseable {
  private static final Delay RECONNECT_DELAY =
      Delay.exponential(Duration.ofMillis(5), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS);
  /** How often a Cluster's topology is refreshed after a timeout, and for how long. */
  private static final long REFRESH_EVERY_MILLIS = 250;
  private static final long REFRESH_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

  private final ClientResources resources;
  private final AbstractRedisClient client;
  private final boolean cluster;
  private final Duration timeout;
  private volatile Link link;
  private SentinelFollower follower; // Sentinel only
  private final AtomicBoolean refreshing = new AtomicBoolean();
  private volatile long refreshUntil;
  private volatile boolean closed;
  /** A Cluster's topology refreshes after timeouts: one thread, started only on a Cluster. */
  private final ScheduledExecutorService refresher;

  private RedisConnection(ClientResources resources, AbstractRedisClient client, boolean cluster, Duration timeout) {
    this.resources = resources;
    this.client = client;
    this.cluster = cluster;
    this.timeout = timeout;
    this.refresher = !cluster ? null : Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tally-redis-cluster-refresh");
      t.setDaemon(true);
      return t;
    });
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
    RedisConnection opened = null;
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
            // adaptive refresh (MOVED, ASK, reconnects, uncovered slots) is on by default; a frozen
            // node causes none of them, so timeouts start refreshes too (failed())
            .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                .enablePeriodicRefresh(Duration.ofSeconds(30))
                .build())
            .build());
        StatefulRedisClusterConnection<String, String> conn = c.connect(StringCodec.UTF8);
        connectToEveryPrimary(conn);
        opened = new RedisConnection(resources, c, true, settings.timeout);
        opened.link = new Link(conn, conn.async(), settings.toString(), null);
        return opened;
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
      RedisConnection connection = new RedisConnection(resources, c, false, settings.timeout);
      opened = connection;
      RedisURI uri = settings.uris.get(0);
      if (settings.topology == RedisSettings.Topology.SENTINEL) {
        connection.follower = new SentinelFollower(c, uri, settings.timeout,
            address -> connection.connectAsync(settings, primary(uri, address), address),
            () -> connection.link, next -> connection.link = next);
        connection.link = connection.follower.connectToPrimary();
        connection.follower.listen();
      } else {
        connection.link = connection.connect(settings, uri, uri.getHost() + ":" + uri.getPort());
      }
      return connection;
    } catch (RedisException | StoreUnavailableException e) {
      if (opened != null) {
        opened.close();
      } else {
        if (client != null) {
          client.shutdown(Duration.ZERO, settings.timeout);
        }
        resources.shutdown(0, settings.timeout.toMillis(), TimeUnit.MILLISECONDS);
      }
      String why = e instanceof RedisException r ? why(r) : e.getMessage();
      throw new StoreUnavailableException("cannot connect to Redis (" + settings + "): " + why, e);
    }
  }

  private Link connect(RedisSettings settings, RedisURI uri, String address) {
    return link(settings, ((RedisClient) client).connect(StringCodec.UTF8, uri), address);
  }

  private CompletableFuture<Link> connectAsync(RedisSettings settings, RedisURI uri, String address) {
    return ((RedisClient) client).connectAsync(StringCodec.UTF8, uri).toCompletableFuture()
        .thenApply(conn -> link(settings, conn, address));
  }

  private static Link link(RedisSettings settings, StatefulRedisConnection<String, String> conn, String address) {
    ReplicaAcks acks = settings.replicas == 0 ? null
        : new ReplicaAcks(conn.async(), settings.replicas, settings.timeout.dividedBy(2));
    return new Link(conn, conn.async(), address, acks);
  }

  /** The Sentinel URI's credentials, database and TLS, for the server at {@code address}. */
  private static RedisURI primary(RedisURI group, String address) {
    int colon = address.lastIndexOf(':');
    RedisURI.Builder b = RedisURI.Builder.redis(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)))
        .withSsl(group.isSsl())
        .withDatabase(group.getDatabase())
        .withTimeout(group.getTimeout());
    if (group.isSsl()) {
      b.withVerifyPeer(group.getVerifyMode());
    }
    if (group.getCredentialsProvider() != null) {
      b.withAuthentication(group);
    }
    if (group.getClientName() != null) {
      b.withClientName(group.getClientName());
    }
    return b.build();
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

  /** Closes {@code value}'s connection if it is a link: a step abandoned after it completed. */
  static void closeIfLink(Object value) {
    if (value instanceof Link l) {
      l.connection.closeAsync();
    }
  }

  /** The link calls go on now: take it once per call, and send all of the call on it. */
  Link link() {
    return link;
  }

  /**
   * A call on {@code on} failed with {@code failure} (Lettuce's, untranslated): a timeout, a
   * closed link or a server that is no longer the primary starts the search for the primary
   * (Sentinel) or a topology refresh (Cluster). Cheap; any thread.
   */
  void failed(Link on, Throwable failure) {
    Throwable t = RedisFailures.unwrap(failure);
    String why = suspicion(t);
    if (why == null) {
      return;
    }
    if (follower != null) {
      follower.suspect(on, why);
    } else if (cluster && t instanceof RedisCommandTimeoutException) {
      refreshTopology();
    }
  }

  /** Why {@code t} calls the link's server into question, or null if it does not. */
  private static String suspicion(Throwable t) {
    if (t instanceof RedisCommandTimeoutException) {
      return "no answer within the timeout";
    }
    if (t instanceof RedisCommandExecutionException) {
      String message = String.valueOf(t.getMessage());
      return message.startsWith("READONLY") || message.startsWith("NOREPLICAS") || message.startsWith("MASTERDOWN")
          ? message : null;
    }
    if (t instanceof RedisException) {
      return "the connection is lost: " + t.getMessage();
    }
    return null;
  }

  /**
   * Refreshes the Cluster's topology every {@value #REFRESH_EVERY_MILLIS} ms until
   * {@link #REFRESH_WINDOW_NANOS} after the last timeout: a frozen primary's replica is promoted
   * some seconds after the first timeout, and calls should find it then, not at the next timeout.
   */
  private void refreshTopology() {
    refreshUntil = System.nanoTime() + REFRESH_WINDOW_NANOS;
    if (refreshing.compareAndSet(false, true)) {
      refresher.execute(this::refreshRound);
    }
  }

  private void refreshRound() {
    if (closed || System.nanoTime() > refreshUntil) {
      refreshing.set(false);
      if (!closed && System.nanoTime() <= refreshUntil && refreshing.compareAndSet(false, true)) {
        refresher.execute(this::refreshRound); // a timeout came in as this ended
      }
      return;
    }
    @SuppressWarnings("unchecked")
    StatefulRedisClusterConnection<String, String> conn = (StatefulRedisClusterConnection<String, String>) link.connection;
    try {
      ((RedisClusterClient) client).refreshPartitionsAsync().toCompletableFuture()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      connectToEveryPrimary(conn); // a promoted replica's first command would be refused otherwise
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
        return;
      }
      // the next round tries again
    }
    try {
      refresher.schedule(this::refreshRound, REFRESH_EVERY_MILLIS, TimeUnit.MILLISECONDS);
    } catch (RuntimeException closing) {
      refreshing.set(false);
    }
  }

  boolean cluster() {
    return cluster;
  }

  Duration timeout() {
    return timeout;
  }

  @Override
  public void close() {
    closed = true;
    try {
      if (refresher != null) {
        refresher.shutdownNow();
      }
      if (follower != null) {
        follower.close();
      }
      Link last = link;
      if (last != null) {
        last.connection.close();
      }
    } finally {
      client.shutdown(Duration.ZERO, timeout);
      resources.shutdown(0, timeout.toMillis(), TimeUnit.MILLISECONDS);
    }
  }
}
