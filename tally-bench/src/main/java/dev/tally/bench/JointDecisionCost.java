package dev.tally.bench;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * What one decision across three limiters ({@code Tally.decide(user, tenant, global)}, all or
 * nothing) costs against the three separate decisions a caller makes without it (which can take
 * from one key while another refuses), on each store, at 1 and 32 threads, in alternating rounds
 * of one run. Every request is granted (the limits are far above the load), so both sides do the
 * same work on the stores' state; threads are users, four tenants share them, one global key:
 *
 * <pre>
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.JointDecisionCost \
 *     [--stores mem:,file:,redis,postgresql] [--threads 1,32] [--seconds 3] [--rounds 3]
 * </pre>
 *
 * {@code redis} starts a {@code redis-server} and {@code postgresql} a PostgreSQL of its own
 * (Debian's binaries); {@code file:} uses a temporary file. DynamoDB decides jointly with
 * {@code TransactWriteItems}, which dynalite lacks, so it is not measured here.
 */
public final class JointDecisionCost {
  private JointDecisionCost() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    List<String> stores = Arrays.asList(o.getOrDefault("stores", "mem:,file:,redis,postgresql").split(","));
    int[] threads = Arrays.stream(o.getOrDefault("threads", "1,32").split(",")).mapToInt(Integer::parseInt).toArray();
    double seconds = Double.parseDouble(o.getOrDefault("seconds", "3"));
    int rounds = Integer.parseInt(o.getOrDefault("rounds", "3"));
    System.out.printf(Locale.ROOT, "%-12s %7s %16s %16s %8s%n", "store", "threads", "separate (3)/s", "joint/s",
        "joint/sep");
    for (String store : stores) {
      try (BenchStore s = BenchStore.start(store); Tally tally = Tally.open(s.uri())) {
        for (int n : threads) {
          measure(tally, store, n, seconds, rounds);
        }
      }
    }
  }

  private static void measure(Tally tally, String store, int threads, double seconds, int rounds)
      throws InterruptedException {
    Limit plenty = Limit.tokenBucket(1_000_000_000_000L, Duration.ofSeconds(1));
    String run = "joint-" + System.nanoTime() + ":";
    RateLimiter global = tally.limiter(run + "global", plenty);
    List<List<RateLimiter>> sets = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      sets.add(List.of(tally.limiter(run + "user:" + t, plenty), tally.limiter(run + "tenant:" + (t % 4), plenty),
          global));
    }
    double separate = 0;
    double joint = 0;
    for (int r = 0; r <= rounds; r++) { // round 0 warms up both
      double s = rate(threads, seconds, t -> {
        for (RateLimiter l : sets.get(t)) {
          if (!l.tryAcquire()) {
            throw new IllegalStateException("a separate decision was refused");
          }
        }
      });
      double j = rate(threads, seconds, t -> {
        if (!tally.decide(sets.get(t), 1).allowed()) {
          throw new IllegalStateException("a joint decision was refused");
        }
      });
      if (r > 0) {
        separate += s / rounds;
        joint += j / rounds;
      }
    }
    System.out.printf(Locale.ROOT, "%-12s %7d %16.0f %16.0f %8.2f%n", store, threads, separate, joint,
        joint / separate);
  }

  interface Call {
    void run(int thread);
  }

  /** Requests per second (a request: three separate decisions, or one joint one). */
  static double rate(int threads, double seconds, Call call) throws InterruptedException {
    LongAdder done = new LongAdder();
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    Thread[] workers = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      int me = t;
      workers[t] = new Thread(() -> {
        while (System.nanoTime() < deadline) {
          call.run(me);
          done.increment();
        }
      });
    }
    long start = System.nanoTime();
    for (Thread w : workers) {
      w.start();
    }
    for (Thread w : workers) {
      w.join();
    }
    return done.sum() / ((System.nanoTime() - start) / 1e9);
  }
}
