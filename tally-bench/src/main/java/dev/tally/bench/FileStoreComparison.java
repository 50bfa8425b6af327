package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Tally;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Tally's file store against python-diskcache's {@code Cache.incr}, on this machine, in one run:
 * one thread on one key, one thread over 10,000 keys, two processes on one key, and the
 * per-call latency of one thread on one key. The Python side ({@code diskcache_incr.py}, carried
 * in this jar) runs as a subprocess of the system Python ({@code /usr/bin/python3}, where the
 * Debian package {@code python3-diskcache} installs the module), one case at a time, alternating
 * with the same case on Tally. Prints the load, each result as it comes, and a Markdown table.
 *
 * <pre>
 * mvn -B -q package -pl tally-bench -am -DskipTests
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.FileStoreComparison [--seconds 5]
 *     [--python /usr/bin/python3] [--dir /tmp/somewhere]
 * </pre>
 *
 * <p>How each side is measured, the same way on both: a case runs for a fixed time after a
 * warm-up (for Tally, two seconds, so the JIT has compiled the path; for diskcache, the key
 * exists first and each of the 10,000 keys is created by an untimed first pass), counting calls
 * in batches of 100 between clock reads. Two processes start together on a signal and each
 * reports its own rate; the two rates are summed. Latency times every single call with the
 * language's nanosecond clock ({@link System#nanoTime}, {@code time.perf_counter_ns}); for
 * Tally's tens of nanoseconds a call, the two clock reads are a large part of what is measured,
 * so the cost of a pair of clock reads with nothing between them is reported next to it. Each
 * case checks the counter afterwards: it must equal the increments made.
 *
 * <p>Both stores run with their defaults: Tally {@code sync=periodic} (forced to the device
 * every 100 ms), diskcache SQLite in WAL mode with {@code synchronous=NORMAL} (no fsync per
 * commit). Both keep every completed increment when a process is killed.
 */
public final class FileStoreComparison {
  private static final int KEYS = 10_000;
  private static final int BATCH = 100;
  private static final long WARM_UP_NANOS = TimeUnit.SECONDS.toNanos(2);
  /** Latencies are counted per nanosecond up to this; longer ones in the last bucket. */
  private static final int HISTOGRAM_NANOS = 1_000_000;

  private FileStoreComparison() {}

  /** One measured case: calls made, over how long, and the per-call latency percentiles. */
  record Result(long ops, double seconds, long p50, long p99, long p999, long max, long timer) {
    double rate() {
      return ops / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--child")) {
      child(Path.of(args[1]), Path.of(args[2]), Double.parseDouble(args[3]));
      return;
    }
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      opts.put(args[i], args[i + 1]);
    }
    double seconds = Double.parseDouble(opts.getOrDefault("--seconds", "5"));
    String python = opts.getOrDefault("--python", "/usr/bin/python3");
    Path work = opts.containsKey("--dir") ? Files.createDirectories(Path.of(opts.get("--dir")))
        : Files.createTempDirectory("tally-vs-diskcache");
    Path script = extractScript(work);

    String loadBefore = load();
    System.out.printf(Locale.ROOT, "File store vs python-diskcache, %.0f s per case, %d cores; load %s%n",
        seconds, Runtime.getRuntime().availableProcessors(), loadBefore);
    System.out.println("java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name")
        + "), " + pythonVersion(python));

    Map<String, Result[]> results = new LinkedHashMap<>();
    String[][] cases = {
        {"one-key", "1 thread, 1 key"},
        {"many-keys", "1 thread, 10,000 keys"},
        {"processes", "2 processes, 1 key"},
        {"latency", "1 thread, 1 key, every call timed"}};
    for (String[] c : cases) {
      Result dc = diskcache(python, script, c[0], work.resolve("diskcache-" + c[0]), seconds);
      report("python-diskcache", c[1], dc);
      Result tally = tally(c[0], work.resolve("tally-" + c[0]), seconds);
      report("Tally file store", c[1], tally);
      results.put(c[1], new Result[] {dc, tally});
    }
    String loadAfter = load();

    System.out.println();
    System.out.println("| workload | python-diskcache `Cache.incr` | Tally `file:` `incr` | Tally / diskcache |");
    System.out.println("|---|---:|---:|---:|");
    for (String[] c : cases) {
      if (c[0].equals("latency")) {
        continue;
      }
      Result[] r = results.get(c[1]);
      System.out.printf(Locale.ROOT, "| %s | %s/s | %s/s | %,.0fx |%n", c[1], rate(r[0]), rate(r[1]),
          r[1].rate() / r[0].rate());
    }
    Result[] lat = results.get(cases[3][1]);
    System.out.printf(Locale.ROOT, "| 1 thread, 1 key: latency p50 / p99 / p99.9 per call | %s / %s / %s"
        + " | %s / %s / %s (a clock pair alone: %d ns) | |%n", micros(lat[0].p50), micros(lat[0].p99),
        micros(lat[0].p999), nanos(lat[1].p50), nanos(lat[1].p99), nanos(lat[1].p999), lat[1].timer);
    System.out.println();
    System.out.println("load average (1, 5, 15 min): before " + loadBefore + ", after " + loadAfter);
    deleteTree(work, opts.containsKey("--dir"));
  }

  // ---------------------------------------------------------------- Tally

  private static Result tally(String name, Path dir, double seconds) throws Exception {
    long runNanos = (long) (seconds * 1e9);
    switch (name) {
      case "one-key": {
        try (Tally t = Tally.open("file:" + dir)) {
          Counters c = t.counters();
          c.incr("hot");
          timed(() -> c.incr("hot"), WARM_UP_NANOS);
          long before = c.get("hot").orElseThrow();
          Result r = timed(() -> c.incr("hot"), runNanos);
          check(name, c.get("hot").orElseThrow() - before, r.ops);
          return r;
        }
      }
      case "many-keys": {
        String[] keys = new String[KEYS];
        for (int i = 0; i < KEYS; i++) {
          keys[i] = "k:" + i;
        }
        try (Tally t = Tally.open("file:" + dir)) {
          Counters c = t.counters();
          int[] next = {0};
          Runnable step = () -> {
            int i = next[0];
            c.incr(keys[i]);
            next[0] = i + 1 < KEYS ? i + 1 : 0;
          };
          for (int i = 0; i < KEYS; i++) {
            step.run(); // first pass: create every key
          }
          timed(step, WARM_UP_NANOS);
          long before = sum(c, keys);
          Result r = timed(step, runNanos);
          check(name, sum(c, keys) - before, r.ops);
          return r;
        }
      }
      case "processes":
        return processes(dir, seconds);
      case "latency": {
        try (Tally t = Tally.open("file:" + dir)) {
          Counters c = t.counters();
          c.incr("hot");
          timed(() -> c.incr("hot"), WARM_UP_NANOS);
          long before = c.get("hot").orElseThrow();
          long[] histogram = new long[HISTOGRAM_NANOS + 1];
          long ops = 0;
          long total = 0;
          long max = 0;
          long deadline = System.nanoTime() + runNanos;
          for (long t1 = 0; t1 - deadline < 0; ops++) {
            long t0 = System.nanoTime();
            c.incr("hot");
            t1 = System.nanoTime();
            long d = t1 - t0;
            total += d;
            max = Math.max(max, d);
            histogram[(int) Math.min(d, HISTOGRAM_NANOS)]++;
          }
          check(name, c.get("hot").orElseThrow() - before, ops);
          long[] timer = new long[HISTOGRAM_NANOS + 1];
          for (int i = 0; i < 1_000_000; i++) {
            long t0 = System.nanoTime();
            long t1 = System.nanoTime();
            timer[(int) Math.min(t1 - t0, HISTOGRAM_NANOS)]++;
          }
          return new Result(ops, total / 1e9, percentile(histogram, ops, 500), percentile(histogram, ops, 990),
              percentile(histogram, ops, 999), max, percentile(timer, 1_000_000, 500));
        }
      }
      default:
        throw new IllegalArgumentException(name);
    }
  }

  /** Runs {@code step} in batches until {@code nanos} have passed. */
  private static Result timed(Runnable step, long nanos) {
    long ops = 0;
    long start = System.nanoTime();
    long deadline = start + nanos;
    for (;;) {
      for (int i = 0; i < BATCH; i++) {
        step.run();
      }
      ops += BATCH;
      long now = System.nanoTime();
      if (now - deadline >= 0) {
        return new Result(ops, (now - start) / 1e9, 0, 0, 0, 0, 0);
      }
    }
  }

  private static long sum(Counters c, String[] keys) {
    long s = 0;
    for (String k : keys) {
      s += c.get(k).orElse(0);
    }
    return s;
  }

  private static void check(String name, long counted, long ops) {
    if (counted != ops) {
      throw new IllegalStateException(name + ": the counter moved by " + counted + " for " + ops + " increments");
    }
  }

  /** The {@code permille}-th per mille of the counts in {@code histogram}. */
  private static long percentile(long[] histogram, long count, int permille) {
    long rank = (count * permille + 999) / 1000;
    long seen = 0;
    for (int i = 0; i < histogram.length; i++) {
      seen += histogram[i];
      if (seen >= rank) {
        return i;
      }
    }
    return histogram.length - 1L;
  }

  /** Two child JVMs on one key, started together by a "go" file; their rates summed. */
  private static Result processes(Path dir, double seconds) throws Exception {
    Files.createDirectories(dir);
    Path go = dir.resolve("go");
    List<Process> children = new ArrayList<>();
    List<BufferedReader> outputs = new ArrayList<>();
    try {
      for (int i = 0; i < 2; i++) {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", System.getProperty("java.class.path"), FileStoreComparison.class.getName(),
            "--child", dir.resolve("data").toString(), go.toString(), Double.toString(seconds))
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        children.add(p);
        outputs.add(new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
      }
      for (BufferedReader out : outputs) {
        expect(out, "READY");
      }
      Files.createFile(go);
      long ops = 0;
      double rate = 0;
      for (BufferedReader out : outputs) {
        String[] f = expect(out, "OPS ").split(" ", -1);
        long n = Long.parseLong(f[1]);
        ops += n;
        rate += n / (Long.parseLong(f[3]) / 1e9);
      }
      for (Process p : children) {
        p.waitFor();
      }
      try (Tally t = Tally.open("file:" + dir.resolve("data"))) {
        check("processes", t.counters().get("hot").orElseThrow(), ops);
      }
      return new Result(ops, ops / rate, 0, 0, 0, 0, 0);
    } finally {
      for (Process p : children) {
        p.destroyForcibly();
      }
    }
  }

  private static String expect(BufferedReader out, String prefix) throws IOException {
    for (String line; (line = out.readLine()) != null; ) {
      if (line.startsWith(prefix)) {
        return line;
      }
    }
    throw new IllegalStateException("a child process ended without printing " + prefix);
  }

  /** A child: warms up on a key of its own, waits for the go file, then increments "hot". */
  private static void child(Path data, Path go, double seconds) throws Exception {
    try (Tally t = Tally.open("file:" + data)) {
      Counters c = t.counters();
      String warm = "warm:" + ProcessHandle.current().pid();
      timed(() -> c.incr(warm), WARM_UP_NANOS);
      System.out.println("READY");
      System.out.flush();
      while (!Files.exists(go)) {
        Thread.onSpinWait();
      }
      Result r = timed(() -> c.incr("hot"), (long) (seconds * 1e9));
      System.out.println("OPS " + r.ops + " NANOS " + (long) (r.seconds * 1e9));
      System.out.flush();
    }
  }

  // ---------------------------------------------------------------- python-diskcache

  private static Path extractScript(Path work) throws IOException {
    Path script = work.resolve("diskcache_incr.py");
    try (InputStream in = FileStoreComparison.class.getResourceAsStream("diskcache_incr.py")) {
      if (in == null) {
        throw new IllegalStateException("diskcache_incr.py is missing from the class path");
      }
      Files.copy(in, script);
    }
    return script;
  }

  private static String pythonVersion(String python) throws Exception {
    Process p = new ProcessBuilder(python, "-c",
        "import sys, diskcache; print('python %s, diskcache %s' % (sys.version.split()[0], diskcache.__version__))")
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    if (p.waitFor() != 0) {
      throw new IllegalStateException(python + " cannot import diskcache (apt-get install -y"
          + " python3-diskcache installs it for the system Python, /usr/bin/python3): " + out);
    }
    return out;
  }

  private static Result diskcache(String python, Path script, String name, Path dir, double seconds)
      throws Exception {
    Process p = new ProcessBuilder(python, script.toString(), "--case", name, "--dir", dir.toString(),
        "--seconds", Double.toString(seconds)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String line = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    if (p.waitFor() != 0 || !line.startsWith("RESULT ")) {
      throw new IllegalStateException("diskcache case " + name + " failed: " + line);
    }
    Map<String, String> f = new HashMap<>();
    for (String kv : line.substring(7).split(" ", -1)) {
      int eq = kv.indexOf('=');
      f.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    long ops = Long.parseLong(f.get("ops"));
    check("diskcache " + name, Long.parseLong(f.get("final")), ops);
    return new Result(ops, Double.parseDouble(f.get("seconds")), Long.parseLong(f.getOrDefault("p50_ns", "0")),
        Long.parseLong(f.getOrDefault("p99_ns", "0")), Long.parseLong(f.getOrDefault("p999_ns", "0")),
        Long.parseLong(f.getOrDefault("max_ns", "0")), Long.parseLong(f.getOrDefault("timer_ns", "0")));
  }

  // ---------------------------------------------------------------- output

  private static void report(String store, String workload, Result r) {
    String figures = r.p99 > 0
        ? String.format(Locale.ROOT, "%,d calls: mean %.0f ns, p50 %d ns, p99 %d ns, p99.9 %d ns, max %.1f ms"
            + " (a clock pair alone: %d ns)", r.ops, r.seconds * 1e9 / r.ops, r.p50, r.p99, r.p999, r.max / 1e6, r.timer)
        : String.format(Locale.ROOT, "%s/s (%,d calls in %.2f s)", rate(r), r.ops, r.seconds);
    System.out.printf(Locale.ROOT, "  %-18s %-34s %s   [load %s]%n", store, workload, figures, load());
  }

  private static String rate(Result r) {
    double x = r.rate();
    if (x >= 1e6) {
      return String.format(Locale.ROOT, "%.1f M", x / 1e6);
    }
    if (x >= 1e3) {
      return String.format(Locale.ROOT, "%.1f k", x / 1e3);
    }
    return String.format(Locale.ROOT, "%.0f", x);
  }

  private static String micros(long nanos) {
    return String.format(Locale.ROOT, "%.1f µs", nanos / 1e3);
  }

  private static String nanos(long nanos) {
    return nanos + " ns";
  }

  /** The 1, 5 and 15 minute load averages, as {@code uptime} prints them. */
  private static String load() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ", -1);
      return f[0] + ", " + f[1] + ", " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static void deleteTree(Path root, boolean keep) {
    if (keep) {
      return;
    }
    try (Stream<Path> s = Files.walk(root)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.delete(p);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    } catch (IOException | UncheckedIOException e) {
      System.err.println("could not delete " + root + ": " + e);
    }
  }
}
