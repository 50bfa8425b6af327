package dev.tally.server.http;

import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.Map;

/**
 * Answers the requests of one HTTP/1.1 connection, or of one HTTP/2 stream, in the order they
 * came. Requests pipelined behind one still being answered wait in a short queue; when it is
 * full the connection stops reading, so a client cannot make the server buffer without bound.
 * Responses that complete while a read is being handled are flushed once, at the end of the read.
 */
final class HttpHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  /** Pipelined requests held per connection before it stops reading. */
  static final int MAX_QUEUED = 16;

  private final Router router;
  private final ArrayDeque<FullHttpRequest> queue = new ArrayDeque<>();
  private boolean busy;
  private boolean inRead;
  private boolean flushPending;
  private boolean closing;

  HttpHandler(Router router) {
    this.router = router;
  }

  /** Whether a request is being answered (an idle timeout must not cut it). */
  boolean busy() {
    return busy;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof FullHttpRequest req)) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (closing) {
      req.release();
      return;
    }
    inRead = true;
    try {
      if (busy) {
        queue.add(req);
        if (queue.size() >= MAX_QUEUED) {
          ctx.channel().config().setAutoRead(false);
        }
        return;
      }
      process(ctx, req);
    } finally {
      inRead = false;
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    if (flushPending) {
      flushPending = false;
      ctx.flush();
    }
    ctx.fireChannelReadComplete();
  }

  private void process(ChannelHandlerContext ctx, FullHttpRequest req) {
    busy = true;
    if (req.decoderResult().isFailure()) {
      Throwable cause = req.decoderResult().cause();
      req.release();
      write(ctx, malformed(cause), false);
      return;
    }
    boolean keepAlive = HttpUtil.isKeepAlive(req);
    HttpHeaders headers = req.headers();
    byte[] body = ByteBufUtil.getBytes(req.content());
    Router.Request r = new Router.Request(req.method().name(), req.uri(),
        req.protocolVersion().text(), headers, body, remote(ctx.channel()));
    req.release();
    router.handle(r).whenComplete((answer, failure) -> {
      Answer a = answer;
      if (failure != null) { // Router answers everything; this is a bug's last resort
        Reply reply = Reply.error(Api.unwrap(failure));
        a = Answer.of(reply, reply.bytes());
      }
      Answer out = a;
      if (ctx.executor().inEventLoop()) {
        write(ctx, out, keepAlive);
      } else {
        ctx.executor().execute(() -> write(ctx, out, keepAlive));
      }
    });
  }

  /** The answer to a request the decoder could not read: too long a line or header, bad framing. */
  private static Answer malformed(Throwable cause) {
    Reply reply;
    if (cause instanceof TooLongHttpHeaderException) {
      reply = Reply.error(Problem.HEADERS_TOO_LARGE, "the request's header fields are larger than"
          + " the " + TallyServer.MAX_HEADER_BYTES + " bytes allowed");
    } else if (cause instanceof TooLongHttpLineException) {
      reply = Reply.error(Problem.URI_TOO_LONG, "the request line is longer than the "
          + TallyServer.MAX_LINE_BYTES + " bytes allowed");
    } else if (cause instanceof TooLongFrameException) {
      reply = Reply.error(Problem.HEADERS_TOO_LARGE, String.valueOf(cause.getMessage()));
    } else {
      reply = Reply.error(Problem.BAD_REQUEST, "malformed HTTP request: " + cause.getMessage());
    }
    return Answer.of(reply, reply.bytes());
  }

  private void write(ChannelHandlerContext ctx, Answer a, boolean keepAlive) {
    if (!ctx.channel().isActive()) {
      drain();
      return;
    }
    FullHttpResponse resp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
        HttpResponseStatus.valueOf(a.status()), Unpooled.wrappedBuffer(a.body()));
    HttpHeaders h = resp.headers();
    boolean close = !keepAlive;
    for (Map.Entry<String, String> e : a.headers()) {
      if (e.getKey().equalsIgnoreCase("Connection") && e.getValue().equalsIgnoreCase("close")) {
        close = true;
      } else {
        h.add(e.getKey(), e.getValue());
      }
    }
    if (a.contentType() != null) {
      h.set(HttpHeaderNames.CONTENT_TYPE, a.contentType());
    }
    h.set(HttpHeaderNames.CONTENT_LENGTH, a.contentLength());
    if (close) {
      h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    if (close) {
      closing = true;
      drain();
      flushPending = false;
      ctx.writeAndFlush(resp).addListener(ChannelFutureListener.CLOSE);
      return;
    }
    // The void promise: no listener to allocate; a failed write reaches exceptionCaught.
    if (inRead) {
      ctx.write(resp, ctx.voidPromise());
      flushPending = true;
    } else {
      ctx.writeAndFlush(resp, ctx.voidPromise());
    }
    busy = false;
    FullHttpRequest next = queue.poll();
    if (queue.size() < MAX_QUEUED / 2 && !ctx.channel().config().isAutoRead()) {
      ctx.channel().config().setAutoRead(true);
    }
    if (next != null) {
      boolean wasInRead = inRead;
      inRead = true; // answers of queued requests are flushed together
      try {
        process(ctx, next);
      } finally {
        inRead = wasInRead;
      }
      if (!wasInRead && flushPending) {
        flushPending = false;
        ctx.flush();
      }
    }
  }

  private void drain() {
    FullHttpRequest r;
    while ((r = queue.poll()) != null) {
      r.release();
    }
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt instanceof IdleStateEvent && !busy) {
      ctx.close(); // an idle keep-alive connection
      return;
    }
    ctx.fireUserEventTriggered(evt);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    drain();
    ctx.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    LOG.log(Level.DEBUG, "connection closed after: {0}", cause.toString());
    ctx.close();
  }

  static String remote(Channel ch) {
    Channel c = ch.parent() != null && ch.remoteAddress() == null ? ch.parent() : ch;
    SocketAddress a = c.remoteAddress();
    if (a == null && ch.parent() != null) {
      a = ch.parent().remoteAddress();
    }
    return a instanceof InetSocketAddress i ? i.getAddress().getHostAddress() : String.valueOf(a);
  }
}
