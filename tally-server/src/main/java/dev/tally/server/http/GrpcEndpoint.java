package dev.tally.server.http;

import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.TallyException;
import dev.tally.server.envoy.Rls;
import dev.tally.server.envoy.RlsCodec;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.NamedLimits.Code;
import dev.tally.server.ratelimit.NamedLimits.Outcome;
import dev.tally.server.ratelimit.Rule;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Envoy's rate limit service, {@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit},
 * on grpc-java over Netty event loops of its own, over TLS when the server has a certificate. Calls run on those loops
 * ({@code directExecutor}) and call Tally's asynchronous limiter API through {@link NamedLimits},
 * so no thread waits for the store; the answer is sent from whichever thread completes the
 * decision. With a bearer token configured, every call must carry the metadata
 * {@code authorization: Bearer <token>} (Envoy's {@code grpc_service.initial_metadata}).
 *
 * <p>Failures map onto gRPC status codes Envoy treats as errors (it then applies its own
 * {@code failure_mode_deny}): a store that cannot be reached is {@code UNAVAILABLE}, a store
 * timeout {@code DEADLINE_EXCEEDED}, a request Tally cannot check (no domain, too many
 * descriptors) {@code INVALID_ARGUMENT}, a message that does not parse {@code INTERNAL}. One
 * descriptor Tally cannot decide is refused on its own ({@code NamedLimits}), never the request.
 */
final class GrpcEndpoint implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final Server server;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;

  private GrpcEndpoint(Server server, EventLoopGroup boss, EventLoopGroup workers) {
    this.server = server;
    this.boss = boss;
    this.workers = workers;
  }

  /**
   * Listens on {@code address:port} (0: any free port).
   *
   * @param tls the server's TLS context (ALPN {@code h2}), or null for HTTP/2 in cleartext
   * @param responseHeaders whether answers carry {@code x-ratelimit-limit}, {@code -remaining}
   *     and {@code -reset} for Envoy to add to its response
   * @param registry where calls are timed, or null
   * @throws IOException if the address cannot be listened on
   */
  static GrpcEndpoint start(NamedLimits limits, InetAddress address, int port, SslContext tls,
      Auth auth, int threads, int maxMessageBytes, boolean responseHeaders, MeterRegistry registry)
      throws IOException {
    boolean epoll = Epoll.isAvailable();
    IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("tally-grpc-accept", true), io);
    EventLoopGroup workers = new MultiThreadIoEventLoopGroup(threads,
        new DefaultThreadFactory("tally-grpc", true), io);
    Service service = new Service(limits, responseHeaders, registry);
    ServerServiceDefinition definition = ServerServiceDefinition.builder(Rls.SERVICE)
        .addMethod(RlsCodec.SHOULD_RATE_LIMIT_BYTES, ServerCalls.asyncUnaryCall(service::shouldRateLimit))
        .build();
    NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(address, port));
    if (tls != null) {
      builder.sslContext(tls);
    }
    Server server = builder
        .channelType(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
        .bossEventLoopGroup(boss)
        .workerEventLoopGroup(workers)
        .directExecutor()
        .maxInboundMessageSize(Math.max(maxMessageBytes, 1024))
        // HTTP/2 rapid reset (CVE-2023-44487): a client that opens and cancels streams faster than
        // this is cut off, instead of keeping the loop busy for every other connection
        .maxRstFramesPerWindow(TallyServer.MAX_RESETS, TallyServer.RESET_WINDOW_SECONDS)
        .addService(ServerInterceptors.intercept(definition, new BearerToken(auth)))
        .build();
    try {
      server.start();
    } catch (IOException | RuntimeException e) {
      server.shutdownNow();
      workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      throw e instanceof IOException io2 ? io2 : new IOException(e.getMessage(), e);
    }
    return new GrpcEndpoint(server, boss, workers);
  }

  /** Where it listens. */
  InetSocketAddress address() {
    return (InetSocketAddress) server.getListenSockets().get(0);
  }

  /** Stops taking calls, lets those in flight finish for up to {@code grace}, then stops. */
  void close(Duration grace) {
    server.shutdown();
    try {
      if (!server.awaitTermination(grace.toNanos(), TimeUnit.NANOSECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    } finally {
      workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
    }
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(5));
  }

  /** Refuses calls without the bearer token, when one is configured. */
  private static final class BearerToken implements ServerInterceptor {
    private final Auth auth;

    BearerToken(Auth auth) {
      this.auth = auth;
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
        ServerCallHandler<Q, A> next) {
      if (!auth.allows(headers.get(AUTHORIZATION))) {
        call.close(io.grpc.Status.UNAUTHENTICATED.withDescription("missing or wrong bearer"
            + " token: send the metadata 'authorization: Bearer <token>' (in Envoy:"
            + " grpc_service.initial_metadata)"), new Metadata());
        return new ServerCall.Listener<>() { };
      }
      return next.startCall(call, headers);
    }
  }

  /** {@code ShouldRateLimit}. */
  static final class Service {
    private final NamedLimits limits;
    private final boolean responseHeaders;
    private final MeterRegistry registry;
    private final Map<String, Timer> timers = new ConcurrentHashMap<>();

    Service(NamedLimits limits, boolean responseHeaders, MeterRegistry registry) {
      this.limits = limits;
      this.responseHeaders = responseHeaders;
      this.registry = registry;
    }

    void shouldRateLimit(byte[] message, StreamObserver<Rls.Response> observer) {
      long start = System.nanoTime();
      Rls.Request request;
      try {
        request = RlsCodec.decodeRequest(message);
      } catch (IOException | RuntimeException e) {
        fail(observer, start, io.grpc.Status.INTERNAL.withDescription("not a valid RateLimitRequest: "
            + e.getMessage()));
        return;
      }
      shouldRateLimit(request, observer, start);
    }

    void shouldRateLimit(Rls.Request request, StreamObserver<Rls.Response> observer, long start) {
      if (request.domain().isEmpty()) {
        fail(observer, start, io.grpc.Status.INVALID_ARGUMENT.withDescription("the request names"
            + " no domain; set 'domain' in Envoy's rate limit filter"));
        return;
      }
      CompletionStage<Outcome> stage;
      try {
        stage = limits.check(request.domain(), request.descriptors(), request.hitsAddend());
      } catch (IllegalArgumentException e) {
        fail(observer, start, io.grpc.Status.INVALID_ARGUMENT.withDescription(e.getMessage()));
        return;
      }
      stage.whenComplete((outcome, failure) -> {
        if (failure != null) {
          fail(observer, start, status(Api.unwrap(failure)));
          return;
        }
        Rls.Response response = response(outcome);
        if (cancelled(observer)) {
          return;
        }
        try {
          observer.onNext(response);
          observer.onCompleted();
          time(outcome.overall() == Code.OK ? "ok" : "over_limit", start);
        } catch (StatusRuntimeException gone) { // cancelled meanwhile: nobody to answer
          time("cancelled", start);
        }
      });
    }

    private static boolean cancelled(StreamObserver<?> observer) {
      return observer instanceof ServerCallStreamObserver<?> s && s.isCancelled();
    }

    private void fail(StreamObserver<Rls.Response> observer, long start, io.grpc.Status status) {
      time(status.getCode().name().toLowerCase(java.util.Locale.ROOT), start);
      if (!cancelled(observer)) {
        try {
          observer.onError(status.asRuntimeException());
        } catch (StatusRuntimeException gone) {
          // cancelled meanwhile
        }
      }
    }

    private static io.grpc.Status status(Throwable e) {
      if (e instanceof StoreTimeoutException) {
        return io.grpc.Status.DEADLINE_EXCEEDED.withDescription(e.getMessage());
      }
      if (e instanceof StoreException) {
        return io.grpc.Status.UNAVAILABLE.withDescription(e.getMessage());
      }
      if (e instanceof IllegalArgumentException) {
        return io.grpc.Status.INVALID_ARGUMENT.withDescription(e.getMessage());
      }
      if (e instanceof TallyException) { // the name holds a counter, an id reused...
        return io.grpc.Status.FAILED_PRECONDITION.withDescription(e.getMessage());
      }
      LOG.log(Level.ERROR, "ShouldRateLimit failed", e);
      return io.grpc.Status.INTERNAL.withDescription("internal error ("
          + e.getClass().getSimpleName() + "); the server log has the details");
    }

    Rls.Response response(Outcome o) {
      List<Rls.Status> statuses = new ArrayList<>(o.statuses().size());
      NamedLimits.Status closest = null;
      for (NamedLimits.Status s : o.statuses()) {
        Rule r = s.rule();
        Rls.Limit limit = r == null || r.unlimited() ? null
            : new Rls.Limit(r.name() == null ? "" : r.name(), r.requestsPerUnit(),
                r.unit().number());
        statuses.add(new Rls.Status(s.code() == Code.OK ? Rls.OK : Rls.OVER_LIMIT, limit,
            // whole seconds, rounded up: Envoy reads only the seconds (its reset header would say 0)
            s.remaining(), limit == null ? null : Duration.ofSeconds(RateLimitFields.ceilSeconds(s.resetNanos()))));
        // the headers describe the enforced limit nearest to refusing
        if (s.enforced() && (closest == null || nearer(s, closest))) {
          closest = s;
        }
      }
      List<Rls.Header> headers = List.of();
      if (responseHeaders && closest != null) {
        headers = List.of(
            new Rls.Header("x-ratelimit-limit", Long.toString(closest.rule().requestsPerUnit())),
            new Rls.Header("x-ratelimit-remaining", Long.toString(closest.remaining())),
            new Rls.Header("x-ratelimit-reset",
                Long.toString(RateLimitFields.ceilSeconds(closest.resetNanos()))));
      }
      return new Rls.Response(o.overall() == Code.OK ? Rls.OK : Rls.OVER_LIMIT, statuses,
          headers);
    }

    private static boolean nearer(NamedLimits.Status a, NamedLimits.Status b) {
      if (a.code() != b.code()) {
        return a.code() == Code.OVER_LIMIT;
      }
      return a.remaining() < b.remaining();
    }

    private void time(String code, long start) {
      if (registry == null) {
        return;
      }
      Timer t = timers.get(code);
      if (t == null) {
        t = timers.computeIfAbsent(code, c -> Timer.builder("tally.rls.requests")
            .description("Envoy ShouldRateLimit calls, by outcome")
            .tags("outcome", c)
            .publishPercentileHistogram()
            .register(registry));
      }
      t.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
    }
  }
}
