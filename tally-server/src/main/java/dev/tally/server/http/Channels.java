package dev.tally.server.http;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerUpgradeHandler;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.CleartextHttp2ServerUpgradeHandler;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2ServerUpgradeCodec;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.ApplicationProtocolNegotiationHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.AsciiString;
import io.netty.util.AttributeKey;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The pipelines of a connection. Cleartext: HTTP/1.1, upgraded to HTTP/2 by {@code Upgrade: h2c}
 * or spoken from the first byte by a client with prior knowledge (the connection preface). TLS:
 * HTTP/2 or HTTP/1.1 as ALPN settles. Either way {@link HttpHandler.Aggregator} reads each request
 * whole, its size bounded: the request line, the header fields and the body each have a limit,
 * answered 414, 431 and 413.
 */
final class Channels extends ChannelInitializer<SocketChannel> {
  private static final AttributeKey<AtomicInteger> OPEN_STREAMS =
      AttributeKey.valueOf("tally.openStreams");

  private final Router router;
  private final Gate gate;
  private final SslContext tls;
  private final int maxBodyBytes;
  private final long requestTimeoutNanos;
  private final long idleTimeoutNanos;

  Channels(Router router, Gate gate, SslContext tls, int maxBodyBytes, long requestTimeoutNanos,
      long idleTimeoutNanos) {
    this.router = router;
    this.gate = gate;
    this.tls = tls;
    this.maxBodyBytes = maxBodyBytes;
    this.requestTimeoutNanos = requestTimeoutNanos;
    this.idleTimeoutNanos = idleTimeoutNanos;
  }

  @Override
  protected void initChannel(SocketChannel ch) {
    ChannelPipeline p = ch.pipeline();
    p.addLast("idle", new IdleTimer(idleTimeoutNanos));
    if (tls != null) {
      p.addLast(tls.newHandler(ch.alloc()));
      p.addLast(new ApplicationProtocolNegotiationHandler(ApplicationProtocolNames.HTTP_1_1) {
        @Override
        protected void configurePipeline(ChannelHandlerContext ctx, String protocol) {
          if (ApplicationProtocolNames.HTTP_2.equals(protocol)) {
            ctx.pipeline().addLast(http2FrameCodec(), multiplexer(ctx.channel()),
                new Http2IdleCloser());
          } else {
            http1(ctx.pipeline(), new HttpServerCodec(codecConfig()));
          }
        }
      });
      return;
    }
    HttpServerCodec codec = new HttpServerCodec(codecConfig());
    HttpServerUpgradeHandler upgrade = new HttpServerUpgradeHandler(codec, protocol ->
        AsciiString.contentEquals(Http2CodecUtil.HTTP_UPGRADE_PROTOCOL_NAME, protocol)
            ? new Http2ServerUpgradeCodec(http2FrameCodec(), multiplexer(ch), new Http2IdleCloser())
            : null, maxBodyBytes);
    http1(p, new CleartextHttp2ServerUpgradeHandler(codec, upgrade,
        new ChannelInboundHandlerAdapter() {
          // Put where the decoder was, ahead of the HTTP/1.1 handlers, which then go.
          @Override
          public void handlerAdded(ChannelHandlerContext ctx) {
            ChannelPipeline pipeline = ctx.pipeline();
            pipeline.addAfter(ctx.name(), "h2-frames", http2FrameCodec());
            pipeline.addAfter("h2-frames", "h2-streams", multiplexer(ctx.channel()));
            pipeline.addAfter("h2-streams", null, new Http2IdleCloser());
            // stays, passing everything on: removing itself here would lose the preface
          }
        }));
  }

  private io.netty.handler.codec.http.HttpDecoderConfig codecConfig() {
    return new io.netty.handler.codec.http.HttpDecoderConfig()
        .setMaxInitialLineLength(TallyServer.MAX_LINE_BYTES)
        .setMaxHeaderSize(TallyServer.MAX_HEADER_BYTES)
        .setMaxChunkSize(16 * 1024);
  }

  /** An HTTP/1.1 connection's handlers: the request timer, {@code decoder}, then those after it. */
  private void http1(ChannelPipeline p, ChannelHandler decoder) {
    RequestTimer timer = new RequestTimer(requestTimeoutNanos);
    p.addLast(RequestTimer.NAME, timer);
    p.addLast(decoder);
    p.addLast(new RequestEnd(timer));
    p.addLast(HTTP1_TAIL[0], new HttpHandler.Aggregator(maxBodyBytes));
    p.addLast(HTTP1_TAIL[1], new HttpHandler(router, gate, maxBodyBytes));
  }

  /** The HTTP/1.1 handlers after the decoder, by name: an upgrade to HTTP/2 removes them. */
  private static final String[] HTTP1_TAIL = {"http1-aggregator", "http1-handler"};

  private Http2FrameCodec http2FrameCodec() {
    return Http2FrameCodecBuilder.forServer()
        .initialSettings(Http2Settings.defaultSettings()
            .maxConcurrentStreams(128)
            .maxHeaderListSize(TallyServer.MAX_HEADER_BYTES))
        .decoderEnforceMaxRstFramesPerWindow(TallyServer.MAX_RESETS, TallyServer.RESET_WINDOW_SECONDS)
        .build();
  }

  private ChannelHandler multiplexer(Channel parent) {
    AtomicInteger open = new AtomicInteger();
    parent.attr(OPEN_STREAMS).set(open);
    return new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
      @Override
      protected void initChannel(Http2StreamChannel stream) {
        open.incrementAndGet();
        stream.closeFuture().addListener(f -> open.decrementAndGet());
        stream.pipeline().addLast(new Http2StreamFrameToHttpObjectCodec(true),
            new HttpHandler.Aggregator(maxBodyBytes), new HttpHandler(router, gate, maxBodyBytes));
      }
    });
  }

  /**
   * Tells the request timer when a request has been read whole, and takes it out when the
   * connection becomes HTTP/2 (whose streams the idle timer and the stream limit bound).
   */
  private static final class RequestEnd extends ChannelInboundHandlerAdapter {
    private final RequestTimer timer;

    RequestEnd(RequestTimer timer) {
      this.timer = timer;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      if (msg instanceof LastHttpContent || (msg instanceof HttpMessage m
          && m.decoderResult().isFailure())) {
        timer.received();
      }
      ctx.fireChannelRead(msg);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
      if (evt instanceof CleartextHttp2ServerUpgradeHandler.PriorKnowledgeUpgradeEvent
          || evt instanceof HttpServerUpgradeHandler.UpgradeEvent) {
        if (ctx.pipeline().get(RequestTimer.NAME) != null) {
          ctx.pipeline().remove(RequestTimer.NAME);
        }
        for (String name : HTTP1_TAIL) {
          if (ctx.pipeline().get(name) != null) {
            ctx.pipeline().remove(name);
          }
        }
      }
      ctx.fireUserEventTriggered(evt);
    }
  }

  /** Closes an HTTP/2 connection that has been idle with no stream open. */
  private static final class Http2IdleCloser extends ChannelInboundHandlerAdapter {
    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
      if (evt instanceof IdleStateEvent) {
        AtomicInteger open = ctx.channel().attr(OPEN_STREAMS).get();
        if (open == null || open.get() == 0) {
          ctx.close();
        }
        return;
      }
      ctx.fireUserEventTriggered(evt);
    }
  }
}
