package dev.tally.server.http;

import dev.tally.CircuitBreaker;
import dev.tally.Durations;
import dev.tally.server.app.FailurePolicies;
import dev.tally.Tally;
import dev.tally.TallyMetrics;
import dev.tally.server.app.TallyApp;
import dev.tally.server.envoy.GrpcEndpoint;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.Rules;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.BindException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The HTTP/JSON server over one store, on Netty's event loops (docs/http.md says why): HTTP/1.1
 * with keep-alive and pipelining, HTTP/2 over cleartext (h2c) or TLS (ALPN), every request
 * handled without a thread of its own through the stores' asynchronous API. Bounded memory per
 * connection, timers for slow and idle connections, Prometheus metrics through Micrometer, a
 * bearer token whenever it listens beyond loopback, and a graceful {@link #close}.
 */
public final class TallyServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  /** The longest request line (method, target, version); longer ones get 414. */
  static final int MAX_LINE_BYTES = 8 * 1024;
  /** The most bytes of header fields in one request; more get 431. */
  static final int MAX_HEADER_BYTES = 16 * 1024;
  /**
   * The most streams a client may reset in {@link #RESET_WINDOW_SECONDS} on one HTTP/2 connection
   * (h2c, HTTP/2 over TLS, gRPC) before it is closed (HTTP/2 rapid reset). Half the burst of
   * Netty's default (200 in 30 s), as each stream opened and reset costs the loop a call's worth
   * of objects: a flooding connection is closed after 100, with half the garbage; a steady rate
   * under 10 resets a second, more than Netty's default allows (6.7), still passes.
   */
  static final int MAX_RESETS = 100;
  static final int RESET_WINDOW_SECONDS = 10;
  /** How long shutdown gives answers already decided to reach their connections. */
  private static final Duration ANSWER_BOUND = Duration.ofSeconds(2);

  /**
   * How to serve: {@code tally serve}'s options of the same names. A null token is none (loopback
   * only); null TLS paths serve cleartext.
   */
  public record Settings(String bind, int port, String token, int threads, int maxBodyBytes,
      Duration shutdownGrace, Duration requestTimeout, Duration idleTimeout,
      List<String> allowedHosts, List<String> corsOrigins, boolean accessLog,
      Path tlsCertificate, Path tlsKey, boolean requireIdempotencyKey, CircuitBreaker circuitBreaker) {
    /** The largest body limit: a body is held whole in memory before it is parsed. */
    public static final int MAX_BODY_LIMIT = 16 << 20;

    /** Refuses settings the server cannot honour, naming the option to fix. */
    public Settings {
      if (maxBodyBytes < 1 || maxBodyBytes > MAX_BODY_LIMIT) {
        throw new IllegalArgumentException("--max-body must be between 1 and " + MAX_BODY_LIMIT
            + " bytes (16 MiB), not " + maxBodyBytes);
      }
      if (threads < 1) {
        throw new IllegalArgumentException("--threads must be at least 1, not " + threads);
      }
      if (requestTimeout.isNegative() || requestTimeout.isZero()) {
        throw new IllegalArgumentException("--request-timeout must be positive");
      }
      if (idleTimeout.isNegative() || idleTimeout.isZero()) {
        throw new IllegalArgumentException("--idle-timeout must be positive");
      }
      if ((tlsCertificate == null) != (tlsKey == null)) {
        throw new IllegalArgumentException("TLS needs both --tls-cert and --tls-key");
      }
      allowedHosts = List.copyOf(allowedHosts);
      corsOrigins = List.copyOf(corsOrigins);
    }

    /**
     * Event-loop threads by default: one per two cores, at least one. The loops are not the only
     * threads that need the cores: the kernel's network path, the store's own client threads
     * (Lettuce's event loops, the pool's connections), the collector and the compiler run beside
     * them, and a loop that has to share its core with them pays in context switches on every
     * wake-up (docs/benchmarks.md, HTTP: on 2 cores, one loop answered more requests, at less CPU
     * each, than two). {@code --threads} sets it, e.g. one per core on a host whose clients are
     * elsewhere and whose store is in-process.
     */
    public static int defaultThreads() {
      return Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
    }
  }

  /**
   * The operator's named limits, served over HTTP ({@code /v1/ratelimit}) and, with a port, as
   * Envoy's rate limit service over gRPC (docs/envoy.md) unless the port is null. The caller
   * watches and closes the rules.
   */
  public record NamedLimitSettings(Rules rules, Integer grpcPort, boolean responseHeaders,
      boolean allOrNothing) {}

  private final Tally tally;
  private final TallyApp app;
  private volatile GrpcEndpoint grpc;
  private final Channel listener;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final Gate gate;
  private final Settings settings;
  private final PrometheusMeterRegistry registry;
  private final JvmGcMetrics gcMetrics;
  private final boolean tls;
  private final AtomicBoolean closing = new AtomicBoolean();
  private final CountDownLatch closed = new CountDownLatch(1);

  private TallyServer(Tally tally, TallyApp app, Channel listener, EventLoopGroup boss,
      EventLoopGroup workers, Gate gate, Settings settings, PrometheusMeterRegistry registry,
      JvmGcMetrics gcMetrics, boolean tls) {
    this.tally = tally;
    this.app = app;
    this.listener = listener;
    this.boss = boss;
    this.workers = workers;
    this.gate = gate;
    this.settings = settings;
    this.registry = registry;
    this.gcMetrics = gcMetrics;
    this.tls = tls;
  }

  /**
   * Opens the store and starts serving it, limiters and counters each with its failure policy,
   * with the named limits of {@code named} (null: none).
   *
   * @throws IllegalArgumentException if the settings are unsafe or invalid (a non-loopback
   *     address without a token, a short token, an unknown host), saying what to do
   * @throws IOException if the HTTP or the gRPC address cannot be listened on
   */
  public static TallyServer start(String storeUri, FailurePolicies policies, Settings settings,
      NamedLimitSettings named) throws IOException {
    Objects.requireNonNull(settings, "settings");
    InetAddress address;
    try {
      address = InetAddress.getByName(settings.bind());
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("cannot resolve --bind " + settings.bind()
          + "; use an address such as 127.0.0.1");
    }
    Auth auth = settings.token() == null ? Auth.NONE : Auth.bearer(settings.token());
    if (!address.isLoopbackAddress() && !auth.required()) {
      throw new IllegalArgumentException("binding to " + settings.bind() + " reaches beyond this"
          + " host, so it needs a bearer token: pass --token-file FILE or set TALLY_TOKEN (or bind"
          + " to 127.0.0.1)");
    }
    if (named != null && named.allOrNothing()) {
      NamedLimits.requireJointDecisions(storeUri); // before the store is opened
    }
    BrowserGuard guard = new BrowserGuard(settings.allowedHosts(), settings.corsOrigins());
    SslContext sslContext = settings.tlsCertificate() == null ? null : ServerTls.http(settings);
    SslContext grpcSsl = sslContext == null || named == null || named.grpcPort() == null ? null
        : ServerTls.grpc(settings);

    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new JvmMemoryMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(registry);
    TallyMetrics metrics = TallyMetrics.of(registry, storeUri);

    // the breaker keeps an outage from holding every request for the store's timeout
    Tally tally = Tally.builder(storeUri).failurePolicy(policies.limiters()).listener(metrics)
        .circuitBreaker(settings.circuitBreaker()).build();
    EventLoopGroup boss = null;
    EventLoopGroup workers = null;
    try {
      NamedLimits namedLimits = named == null ? null : new NamedLimits(tally, named.rules(), named.allOrNothing());
      TallyApp app = new TallyApp(tally, metrics.store(), registry, namedLimits, policies.counters());
      Gate gate = new Gate();
      Gauge.builder("tally.http.inflight", gate, Gate::inFlight)
          .description("HTTP requests being handled, including acquires that wait")
          .register(registry);
      Router router = new Router(app, auth, guard, registry, settings.accessLog(),
          settings.requireIdempotencyKey());
      boolean epoll = Epoll.isAvailable();
      IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
      boss = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("tally-accept", true), io);
      workers = new MultiThreadIoEventLoopGroup(settings.threads(),
          new DefaultThreadFactory("tally-http", true), io);
      Class<? extends ServerChannel> channel =
          epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
      ServerBootstrap b = new ServerBootstrap()
          .group(boss, workers)
          .channel(channel)
          .option(ChannelOption.SO_BACKLOG, 1024)
          .childOption(ChannelOption.TCP_NODELAY, true)
          .childOption(ChannelOption.SO_KEEPALIVE, true)
          .childHandler(new Channels(router, gate, sslContext, settings.maxBodyBytes(),
              settings.requestTimeout().toNanos(), settings.idleTimeout().toNanos()));
      Channel listener;
      try {
        listener = b.bind(new InetSocketAddress(address, settings.port())).sync().channel();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while binding", e);
      } catch (Exception e) {
        // bind() rethrows the socket's checked exception undeclared
        if (e instanceof IOException io2) {
          throw io2;
        }
        throw new BindException(String.valueOf(e.getMessage()));
      }
      TallyServer s = new TallyServer(tally, app, listener, boss, workers, gate, settings,
          registry, gc, sslContext != null);
      if (named != null && named.grpcPort() != null) {
        try {
          // on the HTTP server's loops: one event-loop group serves both
          s.grpc = GrpcEndpoint.start(namedLimits, new GrpcEndpoint.Loops(boss, workers, channel),
              new GrpcEndpoint.Options(new InetSocketAddress(address, named.grpcPort()), grpcSsl,
                  auth.required() ? auth::allows : null, settings.maxBodyBytes(), named.responseHeaders(), MAX_RESETS,
                  RESET_WINDOW_SECONDS),
              registry);
        } catch (IOException e) {
          listener.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
          throw new IOException("gRPC port " + named.grpcPort() + ": " + e.getMessage(), e);
        }
        LOG.log(Level.INFO, "Envoy rate limit service (gRPC{0}) on {1}",
            grpcSsl == null ? ", cleartext" : " over TLS", s.grpcAddress());
      }
      LOG.log(Level.INFO, "serving {0} on {1} ({2} event loops, {3}{4})", tally.uri(), s.uri(),
          settings.threads(), epoll ? "epoll" : "nio",
          auth.required() ? ", bearer token required" : "");
      return s;
    } catch (IOException | RuntimeException e) {
      if (workers != null) {
        workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
      if (boss != null) {
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
      tally.close();
      gc.close();
      throw e;
    }
  }

  public URI uri() {
    return URI.create((tls ? "https://" : "http://") + hostPort((InetSocketAddress) listener.localAddress()));
  }

  /** {@code 127.0.0.1:8080}, {@code [::1]:8080}. */
  public static String hostPort(InetSocketAddress a) {
    String host = a.getAddress().getHostAddress();
    return (a.getAddress() instanceof Inet6Address ? "[" + host + "]" : host) + ":" + a.getPort();
  }

  /** Where Envoy's rate limit service listens over gRPC, or null if it does not. */
  public InetSocketAddress grpcAddress() {
    return grpc == null ? null : grpc.address();
  }

  public int port() {
    return ((InetSocketAddress) listener.localAddress()).getPort();
  }

  public void awaitClosed() throws InterruptedException {
    closed.await();
  }

  /**
   * Stops gracefully: the listener closes, new requests on open connections get 503, requests
   * in flight (acquires waiting included) get up to the shutdown grace to be answered; then the
   * acquires still waiting are answered 503, and so is anything else still unanswered, every
   * connection is closed once its answers have gone out, and the event loops and the store close.
   * Idempotent; a second caller waits for the first to finish.
   */
  @Override
  public void close() {
    if (!closing.compareAndSet(false, true)) {
      try {
        closed.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return;
    }
    try {
      listener.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
      if (grpc != null) {
        grpc.close(settings.shutdownGrace()); // calls in flight finish, before the loops stop
      }
      boolean drained = gate.closeAndDrain(settings.shutdownGrace());
      if (!drained) {
        LOG.log(Level.WARNING, "{0} requests still in flight after {1}; closing them",
            gate.inFlight(), Durations.format(settings.shutdownGrace()));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      try {
        app.close(); // answers acquires still waiting, while their connections are open
        try {
          // those answers reach their connections; then whatever is still unanswered gets 503,
          // and each connection closes once what was written has gone out
          gate.closeAndDrain(ANSWER_BOUND);
          if (!gate.finishAll(ANSWER_BOUND)) {
            LOG.log(Level.WARNING, "some connections did not close in {0}",
                Durations.format(ANSWER_BOUND));
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        // Netty closes what is still open at once when a loop stops; nothing is owed any more
        workers.shutdownGracefully(0, 2000, TimeUnit.MILLISECONDS).awaitUninterruptibly(3,
            TimeUnit.SECONDS);
        boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
      } finally {
        tally.close();
        gcMetrics.close();
        registry.close();
        LOG.log(Level.INFO, "stopped");
        closed.countDown();
      }
    }
  }
}
