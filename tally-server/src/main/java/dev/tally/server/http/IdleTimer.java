package dev.tally.server.http;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.timeout.IdleStateEvent;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Fires {@link IdleStateEvent#ALL_IDLE_STATE_EVENT} down the pipeline when a connection has read
 * nothing and flushed nothing for the idle timeout; the handlers after it decide whether to
 * close. Netty's {@code IdleStateHandler} does this too, but it adds a listener to every write,
 * giving each response a promise of its own; here a read or a flush just notes the time, and one
 * check per connection, scheduled once per timeout, compares.
 */
final class IdleTimer extends ChannelDuplexHandler {
  private final long timeoutNanos;
  private long lastActivity;
  private ScheduledFuture<?> check;

  IdleTimer(long timeoutNanos) {
    this.timeoutNanos = timeoutNanos;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    if (ctx.channel().isActive() && ctx.channel().isRegistered()) {
      start(ctx);
    }
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    start(ctx);
    ctx.fireChannelActive();
  }

  private void start(ChannelHandlerContext ctx) {
    if (check == null) {
      lastActivity = System.nanoTime();
      check = ctx.executor().schedule(() -> check(ctx), timeoutNanos, TimeUnit.NANOSECONDS);
    }
  }

  private void check(ChannelHandlerContext ctx) {
    if (!ctx.channel().isOpen()) {
      return;
    }
    long left = lastActivity + timeoutNanos - System.nanoTime();
    if (left <= 0) {
      left = timeoutNanos; // a handler that keeps the connection hears again a timeout later
      lastActivity = System.nanoTime();
      ctx.fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
    }
    if (ctx.channel().isOpen()) {
      check = ctx.executor().schedule(() -> check(ctx), left, TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    lastActivity = System.nanoTime();
    ctx.fireChannelRead(msg);
  }

  @Override
  public void flush(ChannelHandlerContext ctx) {
    lastActivity = System.nanoTime();
    ctx.flush();
  }

  private void stop() {
    if (check != null) {
      check.cancel(false);
      check = null;
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    stop();
    ctx.fireChannelInactive();
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    stop();
  }
}
