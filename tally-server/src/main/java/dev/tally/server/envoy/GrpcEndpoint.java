package dev.tally.server.envoy;

import dev.tally.server.ratelimit.NamedLimits;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.KnownLength;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.grpc.stub.ServerCalls;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.handler.ssl.SslContext;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Envoy's rate limit service, {@code envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit}
 * ({@link RateLimitService}), on grpc-java over the HTTP server's own Netty event loops, over TLS
 * when the server has a certificate. Calls run on those loops ({@code directExecutor}) and call
 * Tally's asynchronous limiter API, so no thread waits for the store; the answer is sent from
 * whichever thread completes the decision. With a bearer token configured, every call must carry
 * the metadata {@code authorization: Bearer <token>} (Envoy's
 * {@code grpc_service.initial_metadata}).
 */
public final class GrpcEndpoint implements AutoCloseable {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** The event loops the endpoint runs on, with their channel class: its owner's, never shut down here. */
  public record Loops(EventLoopGroup boss, EventLoopGroup workers,
      Class<? extends ServerChannel> channel) {
    public Loops {
      Objects.requireNonNull(boss, "boss");
      Objects.requireNonNull(workers, "workers");
      Objects.requireNonNull(channel, "channel");
    }
  }

  /**
   * How the endpoint listens and answers: a null TLS context is cleartext HTTP/2; a null
   * {@code authorized} checks no {@code authorization} metadata (no token configured); at least 1
   * KiB messages are accepted; a connection that resets {@code maxResets} streams in the window
   * is closed (HTTP/2 rapid reset).
   */
  public record Options(InetSocketAddress address, SslContext tls, Predicate<String> authorized,
      int maxMessageBytes, boolean responseHeaders, int maxResets, int resetWindowSeconds) {}

  private final Server server;

  private GrpcEndpoint(Server server) {
    this.server = server;
  }

  /** Listens on {@code options.address()}, on {@code loops}, timing calls in {@code registry} (or nowhere if null). */
  public static GrpcEndpoint start(NamedLimits limits, Loops loops, Options options,
      MeterRegistry registry) throws IOException {
    ResetFloodLog.install();
    RateLimitService service = new RateLimitService(limits, options.responseHeaders(), registry);
    MethodDescriptor<byte[], io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse> method =
        RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(new Bytes(),
            RateLimitServiceGrpc.getShouldRateLimitMethod().getResponseMarshaller()).build();
    ServerServiceDefinition definition =
        ServerServiceDefinition.builder(RateLimitServiceGrpc.SERVICE_NAME)
            .addMethod(method, ServerCalls.asyncUnaryCall(service::shouldRateLimit))
            .build();
    NettyServerBuilder builder = NettyServerBuilder.forAddress(options.address());
    if (options.tls() != null) {
      builder.sslContext(options.tls());
    }
    Server server = builder
        .channelType(loops.channel())
        .bossEventLoopGroup(loops.boss())
        .workerEventLoopGroup(loops.workers())
        .directExecutor()
        .maxInboundMessageSize(Math.max(options.maxMessageBytes(), 1024))
        // HTTP/2 rapid reset (CVE-2023-44487): a client that opens and cancels streams faster than
        // this is cut off at once (GOAWAY, then closed), instead of keeping the loops busy for
        // every other connection; ResetFloodLog keeps the closes from flooding the log
        .maxRstFramesPerWindow(options.maxResets(), options.resetWindowSeconds())
        // Envoy's messages are small: a read of at most 8 KiB, once per turn of the loop, so a
        // connection that sends as fast as it can (a flood) takes its turn like the others
        // instead of having 16 reads of 64 KiB decoded before another connection is served.
        .withChildOption(ChannelOption.RECVBUF_ALLOCATOR,
            new AdaptiveRecvByteBufAllocator(64, 1024, 8192).maxMessagesPerRead(1))
        .addService(options.authorized() == null ? definition
            : ServerInterceptors.intercept(definition, new BearerToken(options.authorized())))
        .build();
    try {
      server.start();
    } catch (IOException | RuntimeException e) {
      server.shutdownNow();
      throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
    }
    return new GrpcEndpoint(server);
  }

  public InetSocketAddress address() {
    return (InetSocketAddress) server.getListenSockets().get(0);
  }

  /**
   * Stops taking calls, lets those in flight finish for up to {@code grace}, then stops: before
   * its owner shuts the event loops down.
   */
  public void close(Duration grace) {
    server.shutdown();
    try {
      if (!server.awaitTermination(grace.toNanos(), TimeUnit.NANOSECONDS)) {
        server.shutdownNow();
        server.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(5));
  }

  /** A message's bytes as they came, for {@link RateLimitService} to parse (and tests to send). */
  static final class Bytes implements MethodDescriptor.Marshaller<byte[]> {
    @Override
    public InputStream stream(byte[] value) {
      return new ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        if (stream instanceof KnownLength) {
          // grpc-java's message streams know their length: one array of that size, filled in one
          // read, instead of readAllBytes' growing buffers and final copy (a tenth of a decision)
          byte[] message = new byte[stream.available()];
          int read = stream.readNBytes(message, 0, message.length);
          if (read == message.length && stream.read() < 0) {
            return message;
          }
          throw new IOException("the message stream held " + read + " bytes, not the "
              + message.length + " it announced");
        }
        return stream.readAllBytes();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** Refuses calls without the bearer token, when one is configured. */
  private static final class BearerToken implements ServerInterceptor {
    private final Predicate<String> authorized;

    BearerToken(Predicate<String> authorized) {
      this.authorized = authorized;
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
        ServerCallHandler<Q, A> next) {
      if (!authorized.test(headers.get(AUTHORIZATION))) {
        call.close(Status.UNAUTHENTICATED.withDescription("missing or wrong bearer"
            + " token: send the metadata 'authorization: Bearer <token>' (in Envoy:"
            + " grpc_service.initial_metadata)"), new Metadata());
        return new ServerCall.Listener<>() { };
      }
      return next.startCall(call, headers);
    }
  }
}
