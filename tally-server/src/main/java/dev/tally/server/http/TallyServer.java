package dev.tally.server.http;

import com.sun.net.httpserver.HttpServer;
import dev.tally.FailurePolicy;
import dev.tally.Tally;
import dev.tally.TallyMetrics;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The HTTP/JSON server over one store: the JDK's built-in {@code com.sun.net.httpserver} with a
 * fixed pool of worker threads (docs/http.md says why), Prometheus metrics through Micrometer,
 * a bearer token whenever it listens beyond loopback, bounded request bodies and a graceful
 * {@link #close}.
 *
 * <pre>{@code
 * try (TallyServer server = TallyServer.start("file:./tally-data", FailurePolicy.THROW,
 *     TallyServer.Settings.defaults())) {
 *   server.awaitClosed();
 * }
 * }</pre>
 */
public final class TallyServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  /** The JDK server's bound, in seconds, on receiving one request (headers and body). */
  static final String REQUEST_TIME_PROPERTY = "sun.net.httpserver.maxReqTime";

  static {
    // The JDK server writes headers and body separately; without TCP_NODELAY, Nagle's
    // algorithm and the client's delayed ACK stall every keep-alive response by ~40 ms.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    // The JDK server reads requests on its worker threads and, by default, waits for ever: a few
    // clients that send part of a request and stop would hold every worker, and the server,
    // health checks included, would answer no one. A request must arrive within this many
    // seconds, or its connection is closed.
    if (System.getProperty(REQUEST_TIME_PROPERTY) == null) {
      System.setProperty(REQUEST_TIME_PROPERTY, "20");
    }
  }

  /**
   * How to serve.
   *
   * @param bind the address to listen on; anything but loopback needs a token
   * @param port the port, or 0 for any free one
   * @param token the bearer token clients must send, or null for none (loopback only)
   * @param threads worker threads
   * @param maxBodyBytes the largest request body accepted (413 beyond)
   * @param shutdownGrace how long {@link #close} waits for requests in flight
   */
  public record Settings(String bind, int port, String token, int threads, int maxBodyBytes,
      Duration shutdownGrace) {
    /** The largest body limit: a body is read whole into memory before it is parsed. */
    public static final int MAX_BODY_LIMIT = 16 << 20;

    /** Refuses settings the server cannot honour, naming the option to fix. */
    public Settings {
      if (maxBodyBytes < 0 || maxBodyBytes > MAX_BODY_LIMIT) {
        throw new IllegalArgumentException("--max-body must be between 0 and " + MAX_BODY_LIMIT
            + " bytes (16 MiB), not " + maxBodyBytes);
      }
      if (threads < 1) {
        throw new IllegalArgumentException("--threads must be at least 1, not " + threads);
      }
    }
    /** 127.0.0.1:8080, no token, 4 threads per core (at least 8), 64 KiB bodies, 10 s grace. */
    public static Settings defaults() {
      return new Settings("127.0.0.1", 8080, null, defaultThreads(), 64 * 1024, Duration.ofSeconds(10));
    }

    /** Worker threads by default: 4 per core, at least 8. Store calls may block on I/O. */
    public static int defaultThreads() {
      return Math.max(8, 4 * Runtime.getRuntime().availableProcessors());
    }
  }

  private final Tally tally;
  private final Api api;
  private final HttpServer server;
  private final ExecutorService workers;
  private final Gate gate;
  private final Settings settings;
  private final PrometheusMeterRegistry registry;
  private final JvmGcMetrics gcMetrics;
  private final AtomicBoolean closing = new AtomicBoolean();
  private final CountDownLatch closed = new CountDownLatch(1);

  private TallyServer(Tally tally, Api api, HttpServer server, ExecutorService workers, Gate gate,
      Settings settings, PrometheusMeterRegistry registry, JvmGcMetrics gcMetrics) {
    this.tally = tally;
    this.api = api;
    this.server = server;
    this.workers = workers;
    this.gate = gate;
    this.settings = settings;
    this.registry = registry;
    this.gcMetrics = gcMetrics;
  }

  /**
   * Opens the store and starts serving it.
   *
   * @throws IllegalArgumentException if the settings are unsafe or invalid (a non-loopback
   *     address without a token, a short token, an unknown host), saying what to do
   * @throws IOException if the address cannot be listened on
   */
  public static TallyServer start(String storeUri, FailurePolicy policy, Settings settings)
      throws IOException {
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
    if (settings.threads() < 1 || settings.maxBodyBytes() < 1) {
      throw new IllegalArgumentException("threads and the body limit must be positive");
    }

    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new JvmMemoryMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    JvmGcMetrics gc = new JvmGcMetrics();
    gc.bindTo(registry);
    TallyMetrics metrics = TallyMetrics.of(registry, storeUri);

    Tally tally = Tally.builder(storeUri).failurePolicy(policy).listener(metrics).build();
    ExecutorService workers = null;
    try {
      Api api = new Api(tally, metrics);
      Gate gate = new Gate();
      Gauge.builder("tally.http.inflight", gate, Gate::inFlight)
          .description("HTTP requests being handled, including acquires that wait")
          .register(registry);
      HttpServer server = HttpServer.create(new InetSocketAddress(address, settings.port()), 1024);
      AtomicInteger n = new AtomicInteger();
      workers = Executors.newFixedThreadPool(settings.threads(), r -> {
        Thread t = new Thread(r, "tally-http-" + n.incrementAndGet());
        t.setDaemon(true);
        return t;
      });
      server.setExecutor(workers);
      server.createContext("/", new Router(api, auth, gate, settings.maxBodyBytes(), registry));
      server.start();
      TallyServer s = new TallyServer(tally, api, server, workers, gate, settings, registry, gc);
      LOG.log(Level.INFO, "serving {0} on {1} ({2} threads{3})", tally.uri(), s.uri(),
          settings.threads(), auth.required() ? ", bearer token required" : "");
      return s;
    } catch (IOException | RuntimeException e) {
      if (workers != null) {
        workers.shutdownNow();
      }
      tally.close();
      gc.close();
      throw e;
    }
  }

  /** Where the server listens, e.g. {@code http://127.0.0.1:8080}. */
  public URI uri() {
    InetSocketAddress a = server.getAddress();
    String host = a.getAddress() instanceof Inet6Address
        ? "[" + a.getAddress().getHostAddress() + "]" : a.getAddress().getHostAddress();
    return URI.create("http://" + host + ":" + a.getPort());
  }

  /** The port listened on (useful with port 0). */
  public int port() {
    return server.getAddress().getPort();
  }

  /** The registry {@code /metrics} exposes. */
  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /** Blocks until {@link #close} has finished. */
  public void awaitClosed() throws InterruptedException {
    closed.await();
  }

  /**
   * Stops gracefully: new requests get 503, requests in flight (acquires waiting included) get
   * up to the shutdown grace to finish, then the listener, the workers and the store close.
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
      boolean drained = gate.closeAndDrain(settings.shutdownGrace());
      if (!drained) {
        LOG.log(Level.WARNING, "{0} requests still in flight after {1}; closing them",
            gate.inFlight(), Specs.format(settings.shutdownGrace()));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      try {
        api.close(); // answers acquires still waiting, while their connections are open
        server.stop(0);
        workers.shutdown();
        try {
          workers.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
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
