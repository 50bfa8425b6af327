package dev.tally.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The bound on how long one HTTP/1.1 request may take to arrive: from its first byte to the end
 * of its body. It sits before the HTTP decoder and sees the raw bytes; the decoder's side tells
 * it, through {@link #received}, when a request is complete. A client that sends part of a
 * request and stops costs one timer on the event loop, not a thread, and when the timer fires it
 * gets {@code 408} and its connection is closed.
 */
final class RequestTimer extends ChannelInboundHandlerAdapter {
  static final String NAME = "request-timer";
  private static final byte[] TIMEOUT_BODY = ("{\"type\":\"about:blank\",\"title\":\"Request Timeout\","
      + "\"status\":408,\"detail\":\"the request did not arrive in time\",\"error\":\"timeout\","
      + "\"message\":\"the request did not arrive in time\"}").getBytes(StandardCharsets.US_ASCII);
  private static final byte[] TIMEOUT = ("HTTP/1.1 408 Request Timeout\r\n"
      + "Content-Type: application/problem+json\r\nContent-Length: " + TIMEOUT_BODY.length
      + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);

  private final long timeoutNanos;
  /** The one scheduled check, or null: it is not made anew for each request (see below). */
  private ScheduledFuture<?> timer;
  private boolean receiving;
  private long startedAt;

  RequestTimer(long timeoutNanos) {
    this.timeoutNanos = timeoutNanos;
  }

  /**
   * The first byte of a request starts its clock. The check already scheduled, if any, stays: when
   * it fires it looks at the clock of the request then arriving and schedules itself for that
   * one's deadline, so a connection sending request after request costs a clock read per request,
   * not a timer scheduled and cancelled each time.
   */
  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!receiving && msg instanceof ByteBuf b && b.isReadable()) {
      receiving = true;
      startedAt = System.nanoTime();
      if (timer == null) {
        timer = ctx.executor().schedule(() -> check(ctx), timeoutNanos, TimeUnit.NANOSECONDS);
      }
    }
    ctx.fireChannelRead(msg);
  }

  /** A whole request has been decoded: the next byte starts the next one's clock. */
  void received() {
    receiving = false;
  }

  private void check(ChannelHandlerContext ctx) {
    timer = null;
    if (!receiving || !ctx.channel().isActive()) {
      return;
    }
    long left = startedAt + timeoutNanos - System.nanoTime();
    if (left > 0) {
      timer = ctx.executor().schedule(() -> check(ctx), left, TimeUnit.NANOSECONDS);
      return;
    }
    ByteBuf out = Unpooled.buffer(TIMEOUT.length + TIMEOUT_BODY.length)
        .writeBytes(TIMEOUT).writeBytes(TIMEOUT_BODY);
    ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
  }

  private void cancel() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    cancel();
    ctx.fireChannelInactive();
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    cancel();
  }
}
