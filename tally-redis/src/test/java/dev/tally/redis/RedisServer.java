package dev.tally.redis;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One real {@code redis-server} process on a free loopback port, in a temporary directory, for
 * tests. It can be killed, restarted on the same port, paused and resumed to play outages.
 * Every server still running when the JVM exits is killed by a shutdown hook.
 *
 * <p>The binary is {@code $TALLY_REDIS_SERVER} or {@code redis-server} on the {@code PATH};
 * without one every Redis test fails at once, saying how to install it.
 */
final class RedisServer implements AutoCloseable {
  static final String BINARY = locateBinary();
  private static final Set<RedisServer> RUNNING = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(RedisServer::close), "redis-test-servers"));
  }

  private final Path dir;
  private final int port;
  private final List<String> args;
  private final Map<String, String> environment;
  private Process process;

  private RedisServer(Path dir, int port, List<String> args) {
    this(dir, port, args, Map.of());
  }

  private RedisServer(Path dir, int port, List<String> args, Map<String, String> environment) {
    this.dir = dir;
    this.port = port;
    this.args = args;
    this.environment = environment;
  }

  /** Starts a data server with no persistence; {@code extra} are more {@code --name value} options. */
  static RedisServer start(String... extra) {
    return start(freePort(false), List.of(extra));
  }

  /**
   * Starts a Cluster node (its bus port, port + 10000, is free too); {@code extra} are more
   * {@code --name value} options.
   */
  static RedisServer startClusterNode(String... extra) {
    List<String> args = new ArrayList<>(List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", "2000"));
    args.addAll(List.of(extra));
    return start(freePort(true), args);
  }

  /**
   * Starts a data server with {@code environment} added to its own (e.g. {@code LD_PRELOAD});
   * {@code extra} are more {@code --name value} options.
   */
  static RedisServer startWith(Map<String, String> environment, String... extra) {
    return start(freePort(false), List.of(extra), environment);
  }

  private static RedisServer start(int port, List<String> extra) {
    return start(port, extra, Map.of());
  }

  private static RedisServer start(int port, List<String> extra, Map<String, String> environment) {
    Path dir = tempDir("redis-" + port);
    List<String> args = new ArrayList<>(List.of("--port", Integer.toString(port), "--bind", "127.0.0.1",
        "--dir", dir.toString(), "--logfile", "redis.log", "--save", "", "--appendonly", "no",
        "--daemonize", "no"));
    args.addAll(extra);
    RedisServer server = new RedisServer(dir, port, args, environment);
    server.startProcess();
    return server;
  }

  /**
   * Starts a Sentinel watching {@code primaryPort} under {@code name}, with quick failure
   * detection; {@code extra} are more lines of its configuration file.
   */
  static RedisServer startSentinel(String name, int primaryPort, String... extra) {
    return startSentinel(name, primaryPort, 1, 1000, extra);
  }

  /**
   * A Sentinel watching the primary on {@code primaryPort} under {@code name}, agreeing to a
   * failover with {@code quorum} Sentinels, and calling the primary down after {@code downAfterMillis}.
   */
  static RedisServer startSentinel(String name, int primaryPort, int quorum, int downAfterMillis, String... extra) {
    int port = freePort(false);
    Path dir = tempDir("sentinel-" + port);
    Path conf = dir.resolve("sentinel.conf");
    try {
      Files.writeString(conf, String.join("\n",
          "port " + port,
          "bind 127.0.0.1",
          "dir " + dir,
          "logfile sentinel.log",
          "sentinel monitor " + name + " 127.0.0.1 " + primaryPort + " " + quorum,
          "sentinel down-after-milliseconds " + name + " " + downAfterMillis,
          "sentinel failover-timeout " + name + " 4000",
          "sentinel parallel-syncs " + name + " 1",
          String.join("\n", extra),
          ""));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    RedisServer server = new RedisServer(dir, port, List.of(conf.toString(), "--sentinel"));
    server.startProcess();
    return server;
  }

  /** Starts the process again after {@link #kill}, on the same port and directory. */
  void restart() {
    startProcess();
  }

  /** Starts the process and waits until it answers PING. */
  private synchronized void startProcess() {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException("redis on port " + port + " is already running");
    }
    List<String> command = new ArrayList<>();
    command.add(BINARY);
    command.addAll(args);
    try {
      ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile())
          .redirectErrorStream(true).redirectOutput(dir.resolve("stdout.log").toFile());
      builder.environment().putAll(environment);
      process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + command, e);
    }
    RUNNING.add(this);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (true) {
      if (!process.isAlive()) {
        throw new IllegalStateException("redis-server on port " + port + " exited with " + process.exitValue()
            + ":\n" + logTail());
      }
      try {
        if ("PONG".equals(call("PING"))) {
          return;
        }
      } catch (RuntimeException notYet) {
        // not listening yet, or still loading
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("redis-server on port " + port + " did not answer PING in 15 s:\n" + logTail());
      }
      sleep(20);
    }
  }

  /** Kills the process at once (SIGKILL), as a crash or a pulled cable would. */
  synchronized void kill() {
    if (process != null) {
      resume(); // a stopped process cannot die until continued
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    RUNNING.remove(this);
  }

  /** Freezes the process (SIGSTOP): connections stay open and nothing answers. */
  void pause() {
    signal("STOP");
  }

  /** Undoes {@link #pause} (SIGCONT). */
  void resume() {
    signal("CONT");
  }

  private void signal(String name) {
    if (process == null || !process.isAlive()) {
      return;
    }
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
      if (!kill.waitFor(5, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  int port() {
    return port;
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** One command on a fresh connection. */
  Object call(String... command) {
    return Resp.call(port, command);
  }

  /** An {@code INFO} section as name-value pairs. */
  Map<String, String> info(String section) {
    Map<String, String> values = new TreeMap<>();
    for (String line : ((String) call("INFO", section)).split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && !line.startsWith("#")) {
        values.put(line.substring(0, colon), line.substring(colon + 1));
      }
    }
    return values;
  }

  String logTail() {
    StringBuilder b = new StringBuilder();
    for (String name : new String[] {"redis.log", "sentinel.log", "stdout.log"}) {
      Path log = dir.resolve(name);
      if (Files.exists(log)) {
        try {
          List<String> lines = Files.readAllLines(log);
          b.append(String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size())));
        } catch (IOException e) {
          b.append("(cannot read ").append(log).append(")");
        }
      }
    }
    return b.toString();
  }

  @Override
  public void close() {
    kill();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    } catch (IOException | UncheckedIOException e) {
      // a temporary directory left behind is harmless
    }
  }

  @Override
  public String toString() {
    return "redis-server:" + port;
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static Path tempDir(String name) {
    try {
      return Files.createTempDirectory("tally-" + name + "-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A port free on 127.0.0.1, for a second listener such as {@code --tls-port}. */
  static int freePort() {
    return freePort(false);
  }

  /** A port free on 127.0.0.1 (and port + 10000, a Cluster node's bus port, if asked). */
  private static int freePort(boolean withBusPort) {
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = ThreadLocalRandom.current().nextInt(20_000, 45_000);
      if (bindable(port) && (!withBusPort || bindable(port + 10_000))) {
        return port;
      }
    }
    throw new IllegalStateException("no free port found on 127.0.0.1");
  }

  private static boolean bindable(int port) {
    try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return s.isBound();
    } catch (IOException e) {
      return false;
    }
  }

  private static String locateBinary() {
    String configured = System.getenv("TALLY_REDIS_SERVER");
    if (configured != null && !configured.isBlank()) {
      if (!Files.isExecutable(Path.of(configured))) {
        throw new IllegalStateException("TALLY_REDIS_SERVER=" + configured + " is not an executable file");
      }
      return configured;
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path candidate = Path.of(dir, "redis-server");
      if (Files.isExecutable(candidate)) {
        return candidate.toString();
      }
    }
    throw new IllegalStateException("redis-server is not on the PATH: the Redis tests start real servers."
        + " Install it (Debian: apt-get install redis-server) or set TALLY_REDIS_SERVER to its path");
  }
}
