package dev.tally.bench;

import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code redis-server} the Redis harnesses start for themselves, on a free loopback port, with
 * no persistence, logging to a temporary directory; and the small helpers they share (free ports,
 * the machine's load, percentiles, {@code INFO commandstats}).
 */
final class LocalRedis implements AutoCloseable {
  private final Process process;
  private final int port;
  private final Path dir;

  private LocalRedis(Process process, int port, Path dir) {
    this.process = process;
    this.port = port;
    this.dir = dir;
  }

  /** Starts {@code redis-server} on a free loopback port, with {@code extra} options appended. */
  static LocalRedis start(String... extra) throws IOException {
    int port = freePort();
    Path dir = Files.createTempDirectory("tally-bench-redis");
    List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port), "--bind",
        "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString()));
    command.addAll(Arrays.asList(extra));
    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(dir.resolve("redis.log").toFile()).start();
    return new LocalRedis(process, port, dir);
  }

  int port() {
    return port;
  }

  /** {@code redis://127.0.0.1:port}. */
  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** The server's log. */
  Path log() {
    return dir.resolve("redis.log");
  }

  @Override
  public void close() {
    process.destroy();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** The machine's load average, from {@code /proc/loadavg}. */
  static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim() + " (load 1/5/15 min, running/total, last pid)";
    } catch (IOException e) {
      return "?";
    }
  }

  /** The {@code p} quantile of {@code sorted} (0 if empty). */
  static long percentile(long[] sorted, double p) {
    return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) Math.floor(p * sorted.length))];
  }

  /** Calls per command since the last {@code CONFIG RESETSTAT}, {@code INFO} and {@code CONFIG} left out. */
  static Map<String, Long> commandStats(RedisCommands<String, String> redis) {
    Map<String, Long> calls = new TreeMap<>();
    Pattern stat = Pattern.compile("cmdstat_([^:]+):calls=(\\d+)");
    for (String line : redis.info("commandstats").split("\r?\n", -1)) {
      Matcher m = stat.matcher(line);
      if (m.find() && !m.group(1).equals("info") && !m.group(1).startsWith("config")) {
        calls.put(m.group(1), Long.parseLong(m.group(2)));
      }
    }
    return calls;
  }
}
