package dev.tally.server.envoy;

import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * One log line a minute, at most, for the gRPC connections closed for resetting too many streams
 * (HTTP/2 rapid reset). grpc-java logs each such close with its exception; under a flood that is
 * a line per connection, which costs the event loop as much as the rest of the connection's
 * life, and fills the log at the attacker's pace.
 */
final class ResetFloodLog implements Filter {
  private static final Logger LOG = Logger.getLogger("dev.tally.server");
  private static final long PERIOD_NANOS = TimeUnit.MINUTES.toNanos(1);
  /** Held in a field: java.util.logging forgets the filter of a logger nobody references. */
  static final Logger GRPC_TRANSPORT =
      Logger.getLogger("io.grpc.netty.NettyServerTransport.connections");
  private static final AtomicBoolean INSTALLED = new AtomicBoolean();

  private final Filter next;
  private final AtomicLong closed = new AtomicLong();
  private final AtomicLong nextLine = new AtomicLong(System.nanoTime());

  private ResetFloodLog(Filter next) {
    this.next = next;
  }

  /** Puts the filter in place, once per JVM, ahead of any filter already there. */
  static void install() {
    if (INSTALLED.compareAndSet(false, true)) {
      GRPC_TRANSPORT.setFilter(new ResetFloodLog(GRPC_TRANSPORT.getFilter()));
    }
  }

  @Override
  public boolean isLoggable(LogRecord record) {
    if (!(record.getThrown() instanceof Http2Exception e)
        || e.error() != Http2Error.ENHANCE_YOUR_CALM) {
      return next == null || next.isLoggable(record);
    }
    closed.incrementAndGet();
    long now = System.nanoTime();
    long due = nextLine.get();
    if (now - due >= 0 && nextLine.compareAndSet(due, now + PERIOD_NANOS)) {
      LOG.log(Level.WARNING, "closed {0} gRPC connection(s) for resetting too many streams (HTTP/2"
          + " rapid reset) since the last such line; counted again in a minute if it goes on",
          closed.getAndSet(0));
    }
    return false;
  }
}
