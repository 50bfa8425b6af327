package dev.tally.bench;

import dev.tally.StoreException;
import dev.tally.TallyListener;
import dev.tally.bench.RedisLimiterComparison.Limiter;
import dev.tally.bench.RedisLimiterComparison.Workload;
import io.lettuce.core.RedisClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One hot key shared by several OS processes: {@link RedisLimiterComparison} with
 * {@code --processes P} runs each client in P child JVMs at once, all deciding one Redis key, and
 * reports the summed rate. Each child warms its client up on a key of its own, says it is ready,
 * and starts on the parent's word at one instant of {@code System.nanoTime()} (the machine's
 * monotonic clock, the same in every process on Linux).
 *
 * <p>Every run checks what a shared limit must hold across processes:
 *
 * <ul>
 *   <li><b>every interval</b>: each child counts its grants per millisecond (by the instant its
 *       call returned); the parent sums the processes' counts and checks every interval of whole
 *       milliseconds, of every length, against {@code capacity + rate × (T + d)}, with {@code T}
 *       the interval plus the slowest call seen (a grant is decided somewhere within its call) and
 *       {@code d} the client's lease time (0 for a plain one). In the granting workload the bound
 *       is far above any rate reached here; the denying workload (burst 100, 1,000/s) is the one
 *       where it bites.
 *   <li><b>no permit granted twice</b>: a leased child accounts for every permit the store leased
 *       to it ({@link TallyListener#onLeaseRefill}): granted by it, returned, or expired, exactly,
 *       once it has closed. A permit granted twice, or granted and returned, breaks the equation.
 * </ul>
 */
final class HotKeyProcesses {
  private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
  private static final double WARM_SECONDS = 2;

  private HotKeyProcesses() {}

  /** What one child reported. */
  private record ChildResult(long decisions, long granted, double seconds, long slowestNanos, long[] slices,
      long leased, long returned, long expired) {
    double rate() {
      return decisions / seconds;
    }

    /** Whether the store's grants to this process are each accounted for exactly once. */
    boolean accounted() {
      return leased == granted + returned + expired; // after close: nothing left in stock
    }
  }

  /** One client's run in P processes. */
  private record Run(String name, int threads, List<ChildResult> children, String intervalCheck, boolean withinBound,
      boolean accounted) {
    double rate() {
      return children.stream().mapToDouble(ChildResult::rate).sum();
    }
  }

  /** The parent: every workload, thread count and round, each client in turn, in P children. */
  static void run(Map<String, String> options, String uri, List<String> names) throws Exception {
    int processes = Integer.parseInt(options.get("processes"));
    if (processes < 1) {
      throw new IllegalArgumentException("--processes must be 1 or more, not " + processes);
    }
    double seconds = Double.parseDouble(options.getOrDefault("seconds", "3"));
    int repeat = Integer.parseInt(options.getOrDefault("repeat", "1"));
    int[] threadCounts = Arrays.stream(options.getOrDefault("threads", "1,8").split(","))
        .mapToInt(Integer::parseInt).toArray();
    List<Workload> workloads = Arrays.stream(options.getOrDefault("workloads", "granting").split(","))
        .map(Workload::named).toList();
    System.out.println("# " + processes + " processes on one key, " + uri + "; uptime: " + LocalRedis.load());
    List<String> table = new ArrayList<>();
    for (Workload workload : workloads) {
      for (int threads : threadCounts) {
        Map<String, List<Run>> repeats = new LinkedHashMap<>();
        for (int round = 0; round < repeat; round++) {
          for (int i = 0; i < names.size(); i++) {
            String name = names.get((i + round) % names.size()); // each client goes first in turn
            Run r = runOnce(uri, workload, name, processes, threads, seconds);
            repeats.computeIfAbsent(name, n -> new ArrayList<>()).add(r);
            System.out.println(row(workload, processes, r));
          }
        }
        repeats.forEach((name, runs) -> table.add(summary(workload, processes, threads, name, runs)));
        System.out.print(RedisLimiterComparison.pairedRatios(repeats, "Bucket4j batching", Run::rate,
            "summed over processes, round by round"));
      }
    }
    System.out.println();
    System.out.println("| workload | client | processes × threads | summed decisions/s (median; every round) | every interval within bound | each leased permit granted once |");
    System.out.println("|---|---|---|---|---|---|");
    table.forEach(System.out::println);
    System.out.println("# uptime after: " + LocalRedis.load());
  }

  private static Run runOnce(String uri, Workload workload, String name, int processes, int threads, double seconds)
      throws Exception {
    String key = "hot-" + processes + "p-" + System.nanoTime();
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> children = new ArrayList<>();
    List<BufferedReader> outs = new ArrayList<>();
    try {
      for (int p = 0; p < processes; p++) {
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
            HotKeyProcesses.class.getName(), name, uri, workload.name(), Integer.toString(threads),
            Double.toString(seconds), key).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        children.add(child);
        outs.add(new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8)));
      }
      for (BufferedReader out : outs) {
        expect(out, "READY");
      }
      long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
      for (Process child : children) {
        PrintWriter in = new PrintWriter(new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8), true);
        in.println("GO " + start);
      }
      List<ChildResult> results = new ArrayList<>();
      for (BufferedReader out : outs) {
        results.add(parse(expect(out, "RESULT")));
      }
      for (Process child : children) {
        if (!child.waitFor(30, TimeUnit.SECONDS) || child.exitValue() != 0) {
          throw new IllegalStateException("a child of " + name + " did not exit cleanly");
        }
      }
      boolean leased = name.endsWith("leased");
      double d = leased ? RedisLimiterComparison.LEASE_TIME.toNanos() / 1e9 : 0;
      long[] merged = new long[results.stream().mapToInt(r -> r.slices().length).max().orElse(0)];
      long slowest = 0;
      for (ChildResult r : results) {
        for (int i = 0; i < r.slices().length; i++) {
          merged[i] += r.slices()[i];
        }
        slowest = Math.max(slowest, r.slowestNanos());
      }
      double worstExcess = Double.NEGATIVE_INFINITY;
      String worst = "";
      for (int i = 0; i < merged.length; i++) {
        long sum = 0;
        for (int j = i; j < merged.length; j++) {
          sum += merged[j];
          double t = ((j - i + 1) * SLICE_NANOS + slowest) / 1e9;
          double bound = workload.capacity() + workload.ratePerSecond() * (t + d);
          if (sum - bound > worstExcess) {
            worstExcess = sum - bound;
            worst = String.format(Locale.ROOT, "closest: %,d grants in %d ms against %,.0f", sum, j - i + 1, bound);
          }
        }
      }
      boolean accounted = !leased || results.stream().allMatch(ChildResult::accounted);
      return new Run(name, threads, results, worst + underAdmission(workload, merged, leased, processes),
          worstExcess <= 0, accounted);
    } finally {
      children.forEach(Process::destroyForcibly);
    }
  }

  /**
   * Where demand always exceeds the rate (the denying workload), what the bucket would have
   * granted from the first grant to the last (full at the start, since each run has a key of its
   * own) less what was granted, beside the bound docs/limiters.md gives for permits parked in the
   * stocks of P processes, at most two blocks of k each: {@code P × 2k}, k = min(maxBlock,
   * capacity / 8). What exceeds it is time the processes did not run, on a loaded machine.
   */
  private static String underAdmission(Workload workload, long[] merged, boolean leased, int processes) {
    if (!workload.name().equals("denying")) {
      return "";
    }
    int first = -1;
    int last = -1;
    long granted = 0;
    for (int i = 0; i < merged.length; i++) {
      if (merged[i] > 0) {
        first = first < 0 ? i : first;
        last = i;
      }
      granted += merged[i];
    }
    double ideal = workload.capacity() + workload.ratePerSecond() * (last - first + 1) * (SLICE_NANOS / 1e9);
    long k = leased ? Math.min(RedisLimiterComparison.LEASE_BLOCK, workload.capacity() / 8) : 0;
    return String.format(Locale.ROOT, "; under-admission %,.0f of %,.0f, bound P × 2k = %d", ideal - granted, ideal,
        2L * processes * k);
  }

  private static String expect(BufferedReader out, String word) throws IOException {
    for (String line = out.readLine(); line != null; line = out.readLine()) {
      if (line.startsWith(word)) {
        return line;
      }
      System.out.println("  child: " + line);
    }
    throw new IllegalStateException("a child exited before saying " + word);
  }

  private static ChildResult parse(String line) {
    Map<String, String> f = new LinkedHashMap<>();
    for (String part : line.substring("RESULT ".length()).split(" ", -1)) {
      int eq = part.indexOf('=');
      f.put(part.substring(0, eq), part.substring(eq + 1));
    }
    String csv = f.get("slices");
    long[] slices = csv.isEmpty() ? new long[0] : Arrays.stream(csv.split(",", -1)).mapToLong(Long::parseLong).toArray();
    return new ChildResult(Long.parseLong(f.get("decisions")), Long.parseLong(f.get("granted")),
        Double.parseDouble(f.get("seconds")), Long.parseLong(f.get("slowest")), slices, Long.parseLong(f.get("leased")),
        Long.parseLong(f.get("returned")), Long.parseLong(f.get("expired")));
  }

  private static String row(Workload workload, int processes, Run r) {
    String perChild = String.join(" + ", r.children().stream()
        .map(c -> String.format(Locale.ROOT, "%,.0f", c.rate())).toList());
    String accounts = String.join("; ", r.children().stream().map(c -> String.format(Locale.ROOT,
        "leased %,d = granted %,d + returned %,d + expired %,d", c.leased(), c.granted(), c.returned(), c.expired()))
        .toList());
    return String.format(Locale.ROOT, "| %s | %s | %d × %d | %,.0f (%s) | %s (%s) | %s |", workload.name(), r.name(),
        processes, r.threads(), r.rate(), perChild, r.withinBound() ? "yes" : "**NO**", r.intervalCheck(),
        r.name().endsWith("leased") ? (r.accounted() ? "yes: " : "**NO**: ") + accounts : "n/a");
  }

  private static String summary(Workload workload, int processes, int threads, String name, List<Run> runs) {
    double[] rates = runs.stream().mapToDouble(Run::rate).toArray();
    double[] sorted = rates.clone();
    Arrays.sort(sorted);
    String all = String.join(" / ", Arrays.stream(rates).mapToObj(x -> String.format(Locale.ROOT, "%,.0f", x)).toList());
    return String.format(Locale.ROOT, "| %s | %s | %d × %d | %,.0f (%s) | %s | %s |", workload.name(), name, processes,
        threads, sorted[(sorted.length - 1) / 2], all, runs.stream().allMatch(Run::withinBound) ? "yes" : "**NO**",
        name.endsWith("leased") ? (runs.stream().allMatch(Run::accounted) ? "yes" : "**NO**") : "n/a");
  }

  /** A child: {@code name uri workload threads seconds key}. */
  public static void main(String[] args) throws Exception {
    String name = args[0];
    String uri = args[1];
    Workload workload = Workload.named(args[2]);
    int threads = Integer.parseInt(args[3]);
    double seconds = Double.parseDouble(args[4]);
    String key = args[5];
    AtomicLong leased = new AtomicLong();
    AtomicLong returned = new AtomicLong();
    AtomicLong expired = new AtomicLong();
    TallyListener accounts = new TallyListener() {
      @Override
      public void onLeaseRefill(String k, long requested, long granted) {
        leased.addAndGet(granted);
      }

      @Override
      public void onLeaseReturned(String k, long permits, boolean refunded) {
        returned.addAndGet(permits);
      }

      @Override
      public void onLeaseExpired(String k, long permits, boolean refunded) {
        expired.addAndGet(permits);
      }

      @Override
      public void onLeaseRefillFailed(String k, StoreException cause) {
        System.err.println("refill failed: " + cause);
      }
    };
    RedisClient client = RedisClient.create(uri);
    try {
      // Warm-up on a key of this process's own, so the JIT has compiled the hot paths first.
      try (Limiter warm = opened(name, client, uri, threads, workload, new TallyListener() { })) {
        String own = key + ":warm-" + ProcessHandle.current().pid();
        loop(warm, own, threads, System.nanoTime(), (long) (WARM_SECONDS * 1e9), new long[threads][1]);
      }
      long[] slices;
      long decisions;
      long granted;
      long slowest;
      double elapsed;
      Limiter limiter = opened(name, client, uri, threads, workload, accounts);
      try {
        System.out.println("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String go = in.readLine();
        if (go == null || !go.startsWith("GO ")) {
          throw new IllegalStateException("expected GO <nanos>, got " + go);
        }
        long start = Long.parseLong(go.substring(3).strip());
        long runNanos = (long) (seconds * 1e9);
        long[][] perThread = new long[threads][(int) (runNanos / SLICE_NANOS) + 2 + (int) (5_000_000_000L / SLICE_NANOS)];
        long[] totals = loop(limiter, key, threads, start, runNanos, perThread);
        decisions = totals[0];
        granted = totals[1];
        slowest = totals[2];
        elapsed = totals[3] / 1e9;
        slices = new long[perThread[0].length];
        for (long[] t : perThread) {
          for (int i = 0; i < t.length; i++) {
            slices[i] += t[i];
          }
        }
      } finally {
        limiter.close(); // returns the stock, so the accounts below are complete
      }
      int last = slices.length;
      while (last > 0 && slices[last - 1] == 0) {
        last--;
      }
      String csv = String.join(",", Arrays.stream(slices, 0, last).mapToObj(Long::toString).toList());
      System.out.printf(Locale.ROOT, "RESULT decisions=%d granted=%d seconds=%.6f slowest=%d leased=%d returned=%d"
              + " expired=%d slices=%s%n", decisions, granted, elapsed, slowest, leased.get(), returned.get(),
          expired.get(), csv);
      System.out.flush();
    } finally {
      client.shutdown();
    }
  }

  /**
   * The client, tried again while Redis does not accept the connection in time: four JVMs
   * starting at once on a loaded 2-core machine can take longer than the 2 s connect timeout.
   */
  private static Limiter opened(String name, RedisClient client, String uri, int threads, Workload workload,
      TallyListener listener) throws InterruptedException {
    for (int attempt = 1; ; attempt++) {
      try {
        return RedisLimiterComparison.open(name, client, uri, threads, workload, listener);
      } catch (StoreException | io.lettuce.core.RedisException e) {
        if (attempt == 5) {
          throw e;
        }
        System.err.println("connecting again after: " + e);
        Thread.sleep(500);
      }
    }
  }

  /**
   * {@code threads} threads deciding {@code key} from {@code start} for {@code runNanos}, each
   * counting its grants per slice in its row of {@code slices}; answers decisions, grants, the
   * slowest call and the elapsed nanoseconds.
   */
  private static long[] loop(Limiter limiter, String key, int threads, long start, long runNanos, long[][] slices)
      throws InterruptedException {
    AtomicLong decisions = new AtomicLong();
    AtomicLong granted = new AtomicLong();
    AtomicLong slowest = new AtomicLong();
    AtomicLong lastEnd = new AtomicLong(start);
    List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
    CountDownLatch done = new CountDownLatch(threads);
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread w = new Thread(() -> {
        long n = 0;
        long g = 0;
        long worst = 0;
        long[] mine = slices[thread];
        try {
          while (System.nanoTime() - start < 0) {
            Thread.onSpinWait();
          }
          long deadline = start + runNanos;
          long now = System.nanoTime();
          while (now - deadline < 0) {
            boolean ok = limiter.tryAcquire(thread, key);
            long end = System.nanoTime();
            n++;
            if (ok) {
              g++;
              int slice = (int) ((end - start) / SLICE_NANOS);
              mine[Math.min(slice, mine.length - 1)]++;
            }
            worst = Math.max(worst, end - now);
            now = end;
          }
          lastEnd.accumulateAndGet(now, Math::max);
        } catch (Throwable e) {
          failures.add(e);
        } finally {
          decisions.addAndGet(n);
          granted.addAndGet(g);
          slowest.accumulateAndGet(worst, Math::max);
          done.countDown();
        }
      }, "hot-" + t);
      w.start();
    }
    done.await();
    if (!failures.isEmpty()) {
      throw new IllegalStateException("a worker failed", failures.get(0));
    }
    return new long[] {decisions.get(), granted.get(), slowest.get(), lastEnd.get() - start};
  }
}
