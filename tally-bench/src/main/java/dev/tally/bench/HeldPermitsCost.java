package dev.tally.bench;

import dev.tally.ConcurrencyLimit;
import dev.tally.Lease;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Reservation;
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
 * What permits held over time cost against a plain rate-limiter decision, on each store, at 1 and
 * 32 threads, in alternating rounds of one run: a concurrency limit's acquire and release, and a
 * reservation's reserve and settle. Every call is granted: the threads share 8 names (a tenant's
 * exports, say) of 1,000 permits each, and 8 rate limiters far above the load, so every side does
 * the same kind of work on shared state. A lease pair is one {@code tryAcquire} of a lease and its
 * {@code release}, two steps on the store; a reservation pair is a {@code reserve} of 10 and its
 * {@code settle} at 12 (so a charge), four steps: the limiter's take, the hold's write, the hold's
 * pop and the limiter's charge:
 *
 * <pre>
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.HeldPermitsCost \
 *     [--stores mem:,file:,redis,postgresql,dynamodb] [--threads 1,32] [--seconds 2] [--rounds 3]
 * </pre>
 *
 * See {@link BenchStore} for what each store name starts.
 */
public final class HeldPermitsCost {
  private static final int NAMES = 8;

  private HeldPermitsCost() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    List<String> stores = Arrays.asList(o.getOrDefault("stores", "mem:,file:,redis,postgresql,dynamodb").split(","));
    int[] threads = Arrays.stream(o.getOrDefault("threads", "1,32").split(",")).mapToInt(Integer::parseInt).toArray();
    double seconds = Double.parseDouble(o.getOrDefault("seconds", "2"));
    int rounds = Integer.parseInt(o.getOrDefault("rounds", "3"));
    System.out.println("# uptime: " + LocalRedis.load());
    System.out.printf(Locale.ROOT, "%-12s %7s %14s %18s %10s %17s %10s%n", "store", "threads", "decisions/s",
        "acquire+release/s", "pair/dec", "reserve+settle/s", "pair/dec");
    for (String store : stores) {
      try (BenchStore s = BenchStore.start(store); Tally tally = Tally.open(s.uri())) {
        for (int n : threads) {
          measure(tally, store, n, seconds, rounds);
        }
      }
    }
    System.out.println("# uptime after: " + LocalRedis.load());
  }

  private static void measure(Tally tally, String store, int threads, double seconds, int rounds)
      throws InterruptedException {
    String run = "cc-" + System.nanoTime() + ":";
    List<RateLimiter> limiters = new ArrayList<>();
    List<ConcurrencyLimit> limits = new ArrayList<>();
    for (int i = 0; i < NAMES; i++) {
      limiters.add(tally.limiter(run + "rate:" + i, Limit.tokenBucket(1_000_000_000_000L, Duration.ofSeconds(1))));
      limits.add(tally.concurrency(run + "jobs:" + i, 1_000));
    }
    Duration ttl = Duration.ofMinutes(1);
    List<RateLimiter> budgets = new ArrayList<>();
    for (int i = 0; i < NAMES; i++) {
      budgets.add(tally.limiter(run + "tokens:" + i, Limit.tokenBucket(1_000_000_000_000L, Duration.ofSeconds(1))));
    }
    double decisions = 0;
    double pairs = 0;
    double reservations = 0;
    for (int r = 0; r <= rounds; r++) { // round 0 warms up both
      double d = JointDecisionCost.rate(threads, seconds, t -> {
        if (!limiters.get(t % NAMES).tryAcquire()) {
          throw new IllegalStateException("a decision was refused");
        }
      });
      double p = JointDecisionCost.rate(threads, seconds, t -> {
        Lease l = limits.get(t % NAMES).tryAcquire(ttl)
            .orElseThrow(() -> new IllegalStateException("an acquire was refused"));
        if (!l.release()) {
          throw new IllegalStateException("a release found its lease gone");
        }
      });
      double s = JointDecisionCost.rate(threads, seconds, t -> {
        Reservation reserved = budgets.get(t % NAMES).reserve(10, ttl);
        if (!reserved.granted()) {
          throw new IllegalStateException("a reserve was refused");
        }
        reserved.settle(12);
      });
      if (r > 0) {
        decisions += d / rounds;
        pairs += p / rounds;
        reservations += s / rounds;
      }
    }
    System.out.printf(Locale.ROOT, "%-12s %7d %14.0f %18.0f %10.2f %17.0f %10.2f%n", store, threads, decisions,
        pairs, pairs / decisions, reservations, reservations / decisions);
  }
}
