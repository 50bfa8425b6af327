package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * N threads hammering one hot limiter or counter on a Redis, in rounds, reporting each round's
 * rate and what it cost in CPU: this JVM's, and the whole machine's (Redis included), per
 * operation. For comparing two builds of the client in interleaved runs, where a rate alone
 * cannot tell a faster client from one that burns more CPU:
 *
 * <pre>
 * redis-server --port 6399 --save '' --appendonly no --daemonize yes
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.RedisHotKey --uri redis://127.0.0.1:6399 \
 *     --op limiter --threads 32 --seconds 2 --rounds 3
 * </pre>
 *
 * The first round warms up and is not reported. {@code --op incr} increments one counter.
 */
public final class RedisHotKey {
  private RedisHotKey() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    String uri = options.getOrDefault("uri", "redis://127.0.0.1:6379");
    String op = options.getOrDefault("op", "limiter");
    int threads = Integer.parseInt(options.getOrDefault("threads", "32"));
    double seconds = Double.parseDouble(options.getOrDefault("seconds", "2"));
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
    if (!op.equals("limiter") && !op.equals("incr")) {
      throw new IllegalArgumentException("--op must be limiter or incr, not " + op);
    }
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    int cpus = Runtime.getRuntime().availableProcessors();
    try (Tally tally = Tally.open(uri)) {
      String name = "hot-" + System.nanoTime();
      RateLimiter limiter = tally.limiter(name, Limit.tokenBucket(1_000_000_000L, 1_000_000_000L, Duration.ofSeconds(1)));
      Counters counters = tally.counters(name);
      Runnable call = op.equals("limiter") ? limiter::tryAcquire : () -> counters.incr("k");
      for (int round = 0; round < rounds; round++) {
        long jvmCpu = os.getProcessCpuTime();
        long[] machine = machineTicks();
        long start = System.nanoTime();
        long ops = loop(threads, start + (long) (seconds * 1e9), call);
        double elapsed = (System.nanoTime() - start) / 1e9;
        jvmCpu = os.getProcessCpuTime() - jvmCpu;
        long[] after = machineTicks();
        double busy = 1 - (double) (after[1] - machine[1]) / (after[0] - machine[0]);
        if (round > 0) {
          System.out.printf(Locale.ROOT, "%s, %d threads: %,.0f/s; JVM CPU %.1f µs/op; machine %.0f%% busy, %.1f µs of CPU/op%n",
              op, threads, ops / elapsed, jvmCpu / 1e3 / ops, busy * 100, busy * cpus * elapsed * 1e6 / ops);
        }
      }
    }
  }

  private static long loop(int threads, long deadline, Runnable call) throws InterruptedException {
    LongAdder ops = new LongAdder();
    Thread[] workers = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      workers[t] = new Thread(() -> {
        while (System.nanoTime() < deadline) {
          call.run();
          ops.increment();
        }
      });
      workers[t].start();
    }
    for (Thread w : workers) {
      w.join();
    }
    return ops.sum();
  }

  /** All and idle (idle + iowait) ticks of the machine, from {@code /proc/stat}. */
  private static long[] machineTicks() throws IOException {
    String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+", -1);
    long total = 0;
    for (int i = 1; i < f.length; i++) {
      total += Long.parseLong(f[i]);
    }
    return new long[] {total, Long.parseLong(f[4]) + Long.parseLong(f[5])};
  }
}
