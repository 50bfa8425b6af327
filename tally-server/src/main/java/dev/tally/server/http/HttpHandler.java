package dev.tally.server.http;

import dev.tally.server.app.Problem;
import dev.tally.server.app.TallyApp;
import dev.tally.server.async.Stages;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;

/**
 * Answers the requests of one HTTP/1.1 connection, or of one HTTP/2 stream, in the order they
 * came. Netty's {@link Aggregator} ahead of it reads each request whole, within the body bound,
 * and answers {@code 100 Continue} and {@code 417}; a body past the bound, declared or sent, is
 * answered here (413, a problem) and the connection closed. Requests pipelined behind one still
 * being answered wait in a short queue; when it is full the connection stops reading, so a client
 * cannot make the server buffer without bound.
 * Responses that complete while a read is being handled are flushed once, at the end of the read.
 *
 * <p>A request counts in the {@link Gate} from its admission until its answer is handed to the
 * connection (or the connection is gone), so that shutdown waits for the answer, not only for
 * the call.
 */
final class HttpHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  /** Pipelined requests held per connection before it stops reading. */
  static final int MAX_QUEUED = 16;
  private static final AsciiString[] LENGTHS = new AsciiString[1024];
  private static final Map<String, AsciiString> CONTENT_TYPES = Map.of(
      Router.JSON, AsciiString.cached(Router.JSON),
      "application/problem+json", AsciiString.cached("application/problem+json"),
      Router.PROMETHEUS, AsciiString.cached(Router.PROMETHEUS));

  static {
    for (int i = 0; i < LENGTHS.length; i++) {
      LENGTHS[i] = AsciiString.cached(Integer.toString(i));
    }
  }

  /** A request read whole, or the answer to one that could not be read. */
  private record Received(Router.Request request, boolean keepAlive, Answer malformed) {}

  private final Router router;
  private final Gate gate;
  private final int maxBodyBytes;
  private final ArrayDeque<Received> queue = new ArrayDeque<>();
  /**
   * The header fields of every response, cleared and refilled: the encoder (HTTP/1.1) or the
   * conversion to HTTP/2 frames reads them within the {@code write} call, on this event loop,
   * and keeps nothing of them after.
   */
  private final HttpHeaders responseHeaders = DefaultHttpHeadersFactory.headersFactory().newHeaders();
  private ChannelHandlerContext ctx;
  private String remote;

  private boolean busy;
  /** Whether the request being answered was admitted by the gate (and must leave it). */
  private boolean admitted;
  private boolean inRead;
  private boolean flushPending;
  private boolean closing;

  HttpHandler(Router router, Gate gate, int maxBodyBytes) {
    this.router = router;
    this.gate = gate;
    this.maxBodyBytes = maxBodyBytes;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    this.ctx = ctx;
    gate.register(this);
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    gate.unregister(this);
    leaveGate();
    drain();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    try {
      if (closing || !(msg instanceof FullHttpRequest req)) {
        return;
      }
      inRead = true;
      try {
        received(ctx, req.decoderResult().isFailure()
            ? new Received(null, false, malformed(req.decoderResult().cause()))
            : new Received(new Router.Request(req.method().name(), req.uri(), req.protocolVersion().text(),
                req.headers(), bytes(req.content()), remote(ctx)), HttpUtil.isKeepAlive(req), null));
      } finally {
        inRead = false;
      }
    } finally {
      ReferenceCountUtil.release(msg);
    }
  }

  private static byte[] bytes(ByteBuf body) {
    if (!body.isReadable()) {
      return Answer.EMPTY;
    }
    byte[] bytes = new byte[body.readableBytes()];
    body.getBytes(body.readerIndex(), bytes);
    return bytes;
  }

  /**
   * Netty's aggregation of a request's parts, with {@code 100 Continue} and {@code 417} as it
   * answers them, but a body past the bound, declared or sent, left to {@link #tooLarge}: its 413
   * is a problem like every other answer, and the connection is closed after a lingering read.
   */
  static final class Aggregator extends HttpObjectAggregator {
    private static final Object TOO_LARGE = new Object();

    Aggregator(int maxBodyBytes) {
      super(maxBodyBytes, true);
    }

    @Override
    protected Object newContinueResponse(HttpMessage start, int maxBodyBytes, ChannelPipeline pipeline) {
      return HttpUtil.getContentLength(start, -1L) > maxBodyBytes ? null
          : super.newContinueResponse(start, maxBodyBytes, pipeline);
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
      ctx.fireUserEventTriggered(TOO_LARGE);
    }
  }

  /** The body bound, answered as a problem (413) and the connection closed: the rest is unread. */
  private void tooLarge(ChannelHandlerContext ctx) {
    Reply reply = Reply.error(Problem.TOO_LARGE, "the request body is too large: the limit is "
        + maxBodyBytes + " bytes (tally serve --max-body)");
    byte[] bytes = reply.bytes(false);
    FullHttpResponse resp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
        HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, Unpooled.wrappedBuffer(bytes));
    resp.headers().set(HttpHeaderNames.CONTENT_TYPE, reply.contentType())
        .setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length)
        .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    refuseAndClose(ctx, resp);
  }

  private void refuseAndClose(ChannelHandlerContext ctx, FullHttpResponse resp) {
    closing = true;
    drain();
    flushPending = false;
    ctx.writeAndFlush(resp).addListener(f -> lingerAndClose(ctx));
  }

  /** How long a refused connection goes on reading what its client still sends. */
  private static final long LINGER_MILLIS = 2_000;

  /**
   * Closes after a refusal without losing the answer. A client still sending the body it was
   * refused would get a reset for what it sends after a close, and a reset can discard the answer
   * before the client reads it. So the server ends its own side (FIN), drops what still comes
   * ({@link #closing}), and closes when the client does or after {@value #LINGER_MILLIS} ms, as
   * nginx's lingering close does.
   */
  private static void lingerAndClose(ChannelHandlerContext ctx) {
    Channel ch = ctx.channel();
    if (!(ch instanceof DuplexChannel duplex) || !ch.isActive()) {
      ctx.close();
      return;
    }
    ch.config().setAutoRead(true);
    duplex.shutdownOutput().addListener(f ->
        ctx.executor().schedule(() -> ctx.close(), LINGER_MILLIS, TimeUnit.MILLISECONDS));
  }

  private void received(ChannelHandlerContext ctx, Received r) {
    if (busy) {
      queue.add(r);
      if (queue.size() >= MAX_QUEUED) {
        ctx.channel().config().setAutoRead(false);
      }
      return;
    }
    process(ctx, r);
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    if (flushPending) {
      flushPending = false;
      ctx.flush();
    }
    ctx.fireChannelReadComplete();
  }

  private void process(ChannelHandlerContext ctx, Received received) {
    busy = true;
    if (received.malformed() != null) {
      write(ctx, received.malformed(), false);
      return;
    }
    admitted = gate.enter();
    boolean keepAlive = received.keepAlive();
    CompletionStage<Answer> stage = router.handle(received.request(), admitted);
    if (stage instanceof CompletableFuture<Answer> f && f.isDone()) {
      answered(ctx, Stages.now(f, HttpHandler::lastResort), keepAlive);
      return;
    }
    stage.whenComplete((answer, failure) -> answered(ctx,
        failure == null ? answer : lastResort(failure), keepAlive));
  }

  /** Router answers everything; this is a bug's last resort. */
  private static Answer lastResort(Throwable failure) {
    return Answer.of(Reply.error(failure), false);
  }

  private void answered(ChannelHandlerContext ctx, Answer a, boolean keepAlive) {
    if (ctx.executor().inEventLoop()) {
      write(ctx, a, keepAlive);
    } else {
      ctx.executor().execute(() -> write(ctx, a, keepAlive));
    }
  }

  /** The answer to a request the decoder could not read: too long a line or header, bad framing. */
  private static Answer malformed(Throwable cause) {
    return Answer.of(cause instanceof TooLongHttpHeaderException
        ? Reply.error(Problem.HEADERS_TOO_LARGE, "the request's header fields are larger than the "
            + TallyServer.MAX_HEADER_BYTES + " bytes allowed")
        : cause instanceof TooLongHttpLineException ? Reply.error(Problem.URI_TOO_LONG,
            "the request line is longer than the " + TallyServer.MAX_LINE_BYTES + " bytes allowed")
        : cause instanceof TooLongFrameException
            ? Reply.error(Problem.HEADERS_TOO_LARGE, String.valueOf(cause.getMessage()))
        : Reply.error(Problem.BAD_REQUEST, "malformed HTTP request: " + cause.getMessage()), false);
  }

  private void leaveGate() {
    if (admitted) {
      admitted = false;
      gate.exit();
    }
  }

  private void write(ChannelHandlerContext ctx, Answer a, boolean keepAlive) {
    if (closing || !ctx.channel().isActive()) {
      busy = false;
      leaveGate();
      drain();
      return;
    }
    HttpHeaders h = responseHeaders;
    h.clear();
    boolean close = !keepAlive || gate.closed();
    List<Map.Entry<String, String>> fields = a.headers();
    for (int i = 0; i < fields.size(); i++) { // by index: no iterator for the common empty list
      Map.Entry<String, String> e = fields.get(i);
      if (e.getKey().equalsIgnoreCase("Connection") && e.getValue().equalsIgnoreCase("close")) {
        close = true;
      } else {
        h.add(e.getKey(), e.getValue());
      }
    }
    if (a.contentType() != null) {
      AsciiString known = CONTENT_TYPES.get(a.contentType());
      h.set(HttpHeaderNames.CONTENT_TYPE, known != null ? known : a.contentType());
    }
    int length = a.contentLength();
    h.set(HttpHeaderNames.CONTENT_LENGTH, length < LENGTHS.length ? LENGTHS[length]
        : Integer.toString(length));
    if (close) {
      h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    FullHttpResponse resp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
        HttpResponseStatus.valueOf(a.status()),
        a.body().length == 0 ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(a.body()), h,
        EmptyHttpHeaders.INSTANCE);
    if (close) {
      closing = true;
      drain();
      flushPending = false;
      ctx.writeAndFlush(resp).addListener(ChannelFutureListener.CLOSE);
      busy = false;
      leaveGate();
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
    leaveGate();
    Received next = queue.poll();
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
    queue.clear(); // the requests hold no buffers: their bodies were copied out
  }

  /**
   * At shutdown, once requests in flight have had their grace: a request still being answered
   * gets 503 now (its own answer, should it come, is dropped), and the connection is closed once
   * what was written has gone out. Runs on the event loop; completes {@code done} when closed.
   */
  void finish(CompletableFuture<Void> done) {
    ChannelHandlerContext c = ctx;
    if (c == null || !c.channel().isOpen()) {
      done.complete(null);
      return;
    }
    c.channel().closeFuture().addListener(f -> done.complete(null));
    if (closing) {
      return; // closing already, after an answer
    }
    if (busy) {
      write(c, Answer.of(Reply.error(TallyApp.shuttingDown()), false), false);
      return;
    }
    closing = true;
    c.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
  }

  void runOnLoop(Runnable task, CompletableFuture<Void> done) {
    ChannelHandlerContext c = ctx;
    if (c == null) {
      done.complete(null);
      return;
    }
    try {
      c.executor().execute(task);
    } catch (RejectedExecutionException stopped) {
      done.complete(null);
    }
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt == Aggregator.TOO_LARGE) {
      tooLarge(ctx);
      return;
    }
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

  /** The client's address, worked out once per connection (the access log names it). */
  private String remote(ChannelHandlerContext ctx) {
    String r = remote;
    if (r == null) {
      remote = r = remote(ctx.channel());
    }
    return r;
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
