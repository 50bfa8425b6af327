package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Tally;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * {@link IdempotencyCost} for a machine that other work keeps busy: plain and idempotent
 * {@code incr}s on one thread in alternating slices (100 ms each, by default 40 of each), so
 * that both meet the same background load, and the median of each kind's slices is compared.
 * Several stores can be named: each is measured in turn, in the same run, and a Markdown table
 * closes the run.
 *
 * <pre>
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.IdempotencyCostAlternating mem: file:/tmp/idem [slices]
 * </pre>
 *
 * <p>Calls are timed in batches of {@value #BATCH} between clock reads, so that the clock does
 * not weigh on a plain increment of a few nanoseconds. Besides the wall-clock rate, the thread's
 * CPU time per call is reported: on a shared machine it is the steadier figure, since time the
 * thread spends waiting for a processor is not counted (time spent by the garbage collector's
 * threads is not counted either, and ids the store keeps in memory make work for them).
 */
public final class IdempotencyCostAlternating {
  private static final int BATCH = 100;
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private IdempotencyCostAlternating() {}

  /** The medians of one store's slices: calls per second, and CPU nanoseconds per call. */
  record Result(String uri, double plainRate, double onceRate, double plainCpu, double onceCpu) {}

  public static void main(String[] args) {
    List<String> uris = new ArrayList<>();
    int slices = 40;
    for (String a : args) {
      if (a.chars().allMatch(Character::isDigit)) {
        slices = Integer.parseInt(a);
      } else {
        uris.add(a);
      }
    }
    if (uris.isEmpty()) {
      uris.add("mem:");
    }
    String loadBefore = load();
    System.out.println("load average (1, 5, 15 min) before: " + loadBefore);
    List<Result> results = new ArrayList<>();
    for (String uri : uris) {
      Result r = measure(uri, slices);
      results.add(r);
      System.out.printf(Locale.ROOT, "%s: plain incr %.0f/s (%.1f ns CPU), idempotent incr %.0f/s (%.1f ns CPU)"
          + " (medians of %d alternating 100 ms slices); an id costs %.2fx by rate, %.2fx by CPU%n", uri,
          r.plainRate, r.plainCpu, r.onceRate, r.onceCpu, slices, r.plainRate / r.onceRate, r.onceCpu / r.plainCpu);
    }
    System.out.println();
    System.out.println("| store | plain `incr` | `incr` with a fresh id | idempotent / plain, by rate | by CPU per call |");
    System.out.println("|---|---:|---:|---:|---:|");
    for (Result r : results) {
      System.out.printf(Locale.ROOT, "| `%s` | %,.0f/s, %.1f ns CPU | %,.0f/s, %.1f ns CPU | %.1fx | %.1fx |%n", r.uri,
          r.plainRate, r.plainCpu, r.onceRate, r.onceCpu, r.plainRate / r.onceRate, r.onceCpu / r.plainCpu);
    }
    System.out.println();
    System.out.println("load average (1, 5, 15 min): before " + loadBefore + ", after " + load());
  }

  private static Result measure(String uri, int slices) {
    try (Tally tally = Tally.open(uri)) {
      Counters counters = tally.counters("idem-alt");
      String key = "views:" + UUID.randomUUID();
      String prefix = "alt-" + UUID.randomUUID() + "-";
      long[] next = {0};
      counters.incr(key);
      Runnable plain = () -> counters.incr(key);
      Runnable once = () -> counters.withOperationId(prefix + next[0]++).incr(key);
      for (int i = 0; i < 10; i++) { // warm-up
        slice(plain, 100);
        slice(once, 100);
      }
      double[][] plainSlices = new double[2][slices];
      double[][] onceSlices = new double[2][slices];
      for (int i = 0; i < slices; i++) {
        double[] p = slice(plain, 100);
        double[] o = slice(once, 100);
        plainSlices[0][i] = p[0];
        plainSlices[1][i] = p[1];
        onceSlices[0][i] = o[0];
        onceSlices[1][i] = o[1];
      }
      counters.delete(key);
      return new Result(uri, median(plainSlices[0]), median(onceSlices[0]), median(plainSlices[1]),
          median(onceSlices[1]));
    }
  }

  /** Runs {@code op} for {@code millis}: calls per second and CPU nanoseconds per call. */
  private static double[] slice(Runnable op, long millis) {
    long n = 0;
    long cpu = THREADS.getCurrentThreadCpuTime();
    long start = System.nanoTime();
    long end = start + millis * 1_000_000;
    long now;
    do {
      for (int i = 0; i < BATCH; i++) {
        op.run();
      }
      n += BATCH;
      now = System.nanoTime();
    } while (now < end);
    return new double[] {n * 1e9 / (now - start), (THREADS.getCurrentThreadCpuTime() - cpu) / (double) n};
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  private static String load() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ", -1);
      return f[0] + ", " + f[1] + ", " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }
}
