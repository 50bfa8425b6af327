package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} on a free loopback port, saving nothing, for a server whose store
 * is to go away under it: stopped, frozen with SIGSTOP, or killed.
 */
final class RedisProcess implements AutoCloseable {
  private final Process process;
  private final int port;

  private RedisProcess(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  private static String binary() {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      File f = new File(dir, "redis-server");
      if (f.canExecute()) {
        return f.getPath();
      }
    }
    return null;
  }

  /**
   * Starts {@code redis-server} in {@code dir}, its log there, and waits until it listens; without
   * one on the {@code PATH}, the test is skipped.
   */
  static RedisProcess start(Path dir) throws Exception {
    String binary = binary();
    assumeThat(binary).as("redis-server on the PATH (apt-get install redis-server)").isNotNull();
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }
    Process redis = new ProcessBuilder(binary, "--port", Integer.toString(port), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", dir.toString())
        .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
    for (int i = 0; i < 300; i++) {
      try {
        new Socket("127.0.0.1", port).close();
        return new RedisProcess(redis, port);
      } catch (IOException notYet) {
        Thread.sleep(20);
      }
    }
    redis.destroyForcibly();
    throw new IllegalStateException("redis-server did not listen on " + port);
  }

  /** The store URI of this server, without options. */
  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Sends {@code kill -SIGNAL} (STOP, CONT) to the server. */
  void signal(String signal) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0)
        .as("kill -" + signal).isTrue();
  }

  /** SIGKILL: the store gone at once, as after a crash. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    assertThat(process.waitFor(10, TimeUnit.SECONDS)).as("redis-server exits after SIGKILL").isTrue();
  }

  @Override
  public void close() {
    process.destroyForcibly();
  }
}
