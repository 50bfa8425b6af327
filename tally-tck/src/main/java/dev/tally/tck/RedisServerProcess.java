package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
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
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * A real {@code redis-server} on a free loopback port, saving nothing, for tests whose store is to
 * go away under them: stopped, frozen with {@code SIGSTOP}, killed, or started again empty. The
 * binary is {@code $TALLY_REDIS_SERVER} or {@code redis-server} on the {@code PATH}; its log is
 * {@code redis.log} in the server's directory.
 */
public final class RedisServerProcess implements ServerFreeze, AutoCloseable {
  private static final String BINARY_VARIABLE = "TALLY_REDIS_SERVER";
  private static final String HOW_TO_INSTALL = "install Redis (apt-get install redis-server) or set "
      + BINARY_VARIABLE + " to its path";
  private static final long READY_WITHIN_SECONDS = 15;
  private static final long SIGNAL_WITHIN_SECONDS = 10;

  private final int port;
  private final Path dir;
  private final String binary;
  private volatile Process process;

  private RedisServerProcess(int port, Path dir, String binary) {
    this.port = port;
    this.dir = dir;
    this.binary = binary;
  }

  /**
   * Starts a server in a fresh temporary directory and waits until it answers {@code PING}; without
   * the binary it fails at once, saying how to install it.
   */
  public static RedisServerProcess start() {
    try {
      return start(Files.createTempDirectory("tally-redis"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Starts a server in {@code dir} and waits until it answers {@code PING}; without the binary it
   * fails at once, saying how to install it.
   */
  public static RedisServerProcess start(Path dir) {
    String binary = binary().orElseThrow(() -> new IllegalStateException(
        "no executable " + binaryName() + " found: " + HOW_TO_INSTALL));
    RedisServerProcess redis = new RedisServerProcess(freePort(), dir, binary);
    redis.launch();
    // Spring caches application contexts until the JVM exits: the server must outlive them.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> redis.process.destroyForcibly(), "redis-" + redis.port));
    return redis;
  }

  /** {@code $TALLY_REDIS_SERVER}, or else {@code redis-server}, if it names an executable. */
  private static Optional<String> binary() {
    String name = binaryName();
    if (name.contains(File.separator)) {
      return new File(name).canExecute() ? Optional.of(name) : Optional.empty();
    }
    return Pattern.compile(File.pathSeparator, Pattern.LITERAL)
        .splitAsStream(System.getenv().getOrDefault("PATH", ""))
        .map(dir -> new File(dir, name)).filter(File::canExecute).map(File::getPath).findFirst();
  }

  private static String binaryName() {
    return System.getenv().getOrDefault(BINARY_VARIABLE, "redis-server");
  }

  private static int freePort() {
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return free.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void launch() {
    try {
      process = new ProcessBuilder(List.of(binary, "--port", Integer.toString(port), "--bind", "127.0.0.1",
          "--save", "", "--appendonly", "no", "--dir", dir.toString()))
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile()))
          .start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot run '" + binary + "': " + HOW_TO_INSTALL, e);
    }
    awaitPing();
  }

  private void awaitPing() {
    Process launched = process;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(READY_WITHIN_SECONDS);
    try {
      while (!answersPing()) {
        if (!launched.isAlive()) {
          throw new IllegalStateException("redis-server exited with " + launched.exitValue() + ": "
              + Files.readString(dir.resolve("redis.log")));
        }
        if (System.nanoTime() > deadline) {
          close();
          throw new IllegalStateException("redis-server did not answer PING on port " + port + " within "
              + READY_WITHIN_SECONDS + " s; its log is in " + dir);
        }
        Thread.sleep(10);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private boolean answersPing() {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
      OutputStream out = socket.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      return new String(in.readNBytes(7), StandardCharsets.US_ASCII).equals("+PONG\r\n");
    } catch (IOException notYet) {
      return false;
    }
  }

  /** The store URI of this server, without options. */
  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  public int port() {
    return port;
  }

  /** Freezes the server (SIGSTOP): connections stay open and nothing answers. */
  @Override
  public void freeze() {
    signal("STOP");
  }

  /** Lets a frozen server run again (SIGCONT). */
  @Override
  public void resume() {
    signal("CONT");
  }

  private void signal(String name) {
    long pid = process.pid();
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).inheritIO().start();
      assertThat(kill.waitFor(SIGNAL_WITHIN_SECONDS, TimeUnit.SECONDS) && kill.exitValue() == 0)
          .as("kill -%s %d", name, pid).isTrue();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** SIGKILL, a frozen server too: the store gone at once, as after a crash. */
  public void kill() throws InterruptedException {
    Process killed = process;
    killed.destroyForcibly();
    assertThat(killed.waitFor(SIGNAL_WITHIN_SECONDS, TimeUnit.SECONDS)).as("redis-server exits after SIGKILL").isTrue();
  }

  /** Starts the server again on the same port, empty, after {@link #kill()} or {@link #close()}. */
  public void restart() {
    close();
    launch();
  }

  /** Kills the server, as {@link #kill()} does, without failing a test that is already over. */
  @Override
  public void close() {
    Process killed = process;
    killed.destroyForcibly();
    try {
      killed.waitFor(SIGNAL_WITHIN_SECONDS, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return uri() + " (" + dir + ")";
  }
}
