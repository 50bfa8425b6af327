package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The retry decision (docs/redis.md#lost-replies): a command whose reply is lost with its
 * connection is failed, never sent again by the client after it reconnects, so without an id it
 * counts at most once and the caller is told its outcome is unknown; with an id, the caller's own
 * retry returns the first result. A proxy between the store and Redis lets the command reach
 * Redis, then drops its reply and the connection.
 */
class LostReplyTest {
  private RedisServer server;
  private ReplyCutter proxy;
  private Tally tally;

  @BeforeEach
  void start() {
    server = SharedServers.standalone();
    proxy = new ReplyCutter(server.port());
    tally = Tally.open("redis://127.0.0.1:" + proxy.port());
  }

  @AfterEach
  void stop() {
    tally.close();
    proxy.close();
  }

  @Test
  void anIncrementWhoseReplyIsLostIsNotSentAgainOnReconnect() {
    Counters c = tally.counters("lost-" + System.nanoTime());
    c.incr("plain"); // connected
    assertLostOnce(() -> c.incr("plain"), "the INCRBY");
    assertThat(server.call("GET", c.name() + ":plain")).as("applied once, not re-sent").isEqualTo("2");

    c.incr("script", 1, 100); // EVALSHA counters.lua
    assertLostOnce(() -> c.incr("script", 1, 100), "the script");
    assertThat(server.call("GET", c.name() + ":script")).isEqualTo("102");

    RateLimiter l = tally.limiter(c.name() + ":limiter", Limit.tokenBucket(10, Duration.ofHours(1)));
    l.tryAcquire();
    assertLostOnce(l::tryAcquire, "the limiter script");
    assertThat(l.available()).as("one acquisition, not two").isEqualTo(8);
  }

  @Test
  void withAnIdTheCallersRetryReturnsTheFirstResult() {
    Counters c = tally.counters("lost-" + System.nanoTime());
    c.incr("k", 41);
    Counters once = c.withOperationId("lost-reply-1");
    assertLostOnce(() -> once.incr("k"), "the script under an id");
    assertThat(once.incr("k")).as("the retry returns the first call's result").isEqualTo(42);
    assertThat(c.get("k")).hasValue(42);
  }

  private void assertLostOnce(Supplier<?> call, String what) {
    proxy.cutNextReply();
    assertThatThrownBy(call::get).as(what).isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("may or may not have been applied");
    awaitReconnected();
  }

  private void awaitReconnected() {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (true) {
      try {
        tally.counters().get("lost-reply-probe");
        return;
      } catch (StoreUnavailableException notYet) {
        if (System.nanoTime() > deadline) {
          throw notYet;
        }
        RedisServer.sleep(20);
      }
    }
  }

  /**
   * A TCP proxy to Redis that, when told, lets the next command through and then, instead of its
   * reply, closes the connection on both sides.
   */
  static final class ReplyCutter implements AutoCloseable {
    private final ServerSocket listener;
    private final int target;
    private final AtomicBoolean cut = new AtomicBoolean();

    ReplyCutter(int target) {
      this.target = target;
      try {
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      Thread accept = new Thread(this::accept, "reply-cutter");
      accept.setDaemon(true);
      accept.start();
    }

    int port() {
      return listener.getLocalPort();
    }

    void cutNextReply() {
      cut.set(true);
    }

    private void accept() {
      while (!listener.isClosed()) {
        try {
          Socket client = listener.accept();
          Socket redis = new Socket(InetAddress.getLoopbackAddress(), target);
          client.setTcpNoDelay(true);
          redis.setTcpNoDelay(true);
          pump(client, redis, false);
          pump(redis, client, true);
        } catch (IOException closed) {
          return;
        }
      }
    }

    private void pump(Socket from, Socket to, boolean replies) {
      Thread t = new Thread(() -> {
        byte[] buffer = new byte[65536];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
          int n;
          while ((n = in.read(buffer)) > 0) {
            if (replies && cut.compareAndSet(true, false)) {
              from.close(); // the reply is dropped, and the connection with it
              to.close();
              return;
            }
            out.write(buffer, 0, n);
            out.flush();
          }
        } catch (IOException closed) {
          // the other side closed
        } finally {
          closeQuietly(from);
          closeQuietly(to);
        }
      }, "reply-cutter-pump");
      t.setDaemon(true);
      t.start();
    }

    private static void closeQuietly(Socket s) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }

    @Override
    public void close() {
      try {
        listener.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
  }
}
