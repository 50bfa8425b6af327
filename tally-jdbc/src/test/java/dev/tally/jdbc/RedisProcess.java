package dev.tally.jdbc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;

/** A {@code redis-server} on a free loopback port, for the flush's crash test (Redis as a source). */
final class RedisProcess implements AutoCloseable {
  private final Process process;
  private final int port;

  private RedisProcess(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  static RedisProcess start() {
    String binary = System.getenv().getOrDefault("TALLY_REDIS_SERVER", "redis-server");
    try {
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort();
      }
      Path dir = Files.createTempDirectory("tally-redis-flush");
      Process p = new ProcessBuilder(binary, "--port", Integer.toString(port), "--bind", "127.0.0.1",
          "--save", "", "--appendonly", "no", "--dir", dir.toString())
          .redirectErrorStream(true).redirectOutput(dir.resolve("out.log").toFile()).start();
      for (int i = 0; i < 500; i++) {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
          s.shutdownOutput(); // it listens: done
          RedisProcess r = new RedisProcess(p, port);
          Runtime.getRuntime().addShutdownHook(new Thread(r::close));
          return r;
        } catch (IOException notYet) {
          Thread.sleep(10);
        }
      }
      p.destroyForcibly();
      throw new IllegalStateException("redis-server did not listen on port " + port);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + binary + " (apt-get install redis-server)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  @Override
  public void close() {
    process.destroyForcibly();
  }
}
