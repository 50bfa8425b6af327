package dev.tally.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} on a free loopback port for the starter's tests, without
 * persistence. The binary is {@code $TALLY_REDIS_SERVER} or {@code redis-server} on the PATH;
 * without it the tests fail at once, saying how to install it.
 */
public final class RedisProcess implements AutoCloseable {
  private volatile Process process;
  private final int port;
  private final Path dir;

  private RedisProcess(Process process, int port, Path dir) {
    this.process = process;
    this.port = port;
    this.dir = dir;
  }

  public static RedisProcess start() {
    try {
      Path dir = Files.createTempDirectory("tally-spring-redis");
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort();
      }
      RedisProcess r = new RedisProcess(launch(port, dir), port, dir);
      // Spring caches application contexts until the JVM exits; the server must outlive them.
      Runtime.getRuntime().addShutdownHook(new Thread(() -> r.process.destroyForcibly(), "redis-" + port));
      r.awaitPing();
      return r;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Process launch(int port, Path dir) {
    String binary = System.getenv().getOrDefault("TALLY_REDIS_SERVER", "redis-server");
    try {
      return new ProcessBuilder(List.of(binary, "--port", Integer.toString(port), "--bind", "127.0.0.1",
          "--save", "", "--appendonly", "no", "--dir", dir.toString()))
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile()))
          .start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot run '" + binary + "': install Redis (apt-get install"
          + " redis-server) or set TALLY_REDIS_SERVER to its path", e);
    }
  }

  /** Starts the server again on the same port, empty, after {@link #close()}. */
  public void restart() {
    close();
    process = launch(port, dir);
    try {
      awaitPing();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Freezes the server (SIGSTOP): connections stay open and nothing answers. */
  public void freeze() {
    signal("STOP");
  }

  /** Lets a frozen server run again (SIGCONT). */
  public void resume() {
    signal("CONT");
  }

  private void signal(String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private void awaitPing() throws IOException {
    Process p = process;
    try {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while (!answersPing()) {
        if (!p.isAlive()) {
          throw new IllegalStateException("redis-server exited with " + p.exitValue() + ": "
              + Files.readString(dir.resolve("redis.log")));
        }
        if (System.nanoTime() > deadline) {
          close();
          throw new IllegalStateException("redis-server did not answer PING within 15 s");
        }
        Thread.sleep(10);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private boolean answersPing() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] reply = in.readNBytes(7);
      return new String(reply, StandardCharsets.US_ASCII).equals("+PONG\r\n");
    } catch (IOException e) {
      return false;
    }
  }

  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  public int port() {
    return port;
  }

  /** Kills the server at once, as a crash would (a frozen one too). */
  @Override
  public void close() {
    Process process = this.process;
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return uri() + " (" + dir + ")";
  }
}
