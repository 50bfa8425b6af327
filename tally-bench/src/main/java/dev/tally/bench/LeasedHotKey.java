package dev.tally.bench;

import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A leased limiter against the plain one on one hot key of DynamoDB (dynalite) and PostgreSQL, at
 * 1, 8 and 32 threads, in alternating rounds of one run (each round starts with the other one), a
 * granting token bucket as in {@link RedisLimiterComparison}'s granting workload, the lease as
 * there (blocks of up to 1,000, 100 ms):
 *
 * <pre>
 * (cd tally-dynamodb && npm ci --no-audit --no-fund)    # dynalite
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.LeasedHotKey \
 *     [--stores dynamodb,postgresql] [--threads 1,8,32] [--seconds 3] [--rounds 3]
 * </pre>
 *
 * {@code dynamodb} starts dynalite from {@code tally-dynamodb/node_modules} and
 * {@code postgresql} a PostgreSQL of its own (Debian's binaries, as {@link PostgresComparison}).
 * Each leased run checks its accounts once closed: every permit the store leased was granted,
 * returned or expired, exactly once; and no run granted more than
 * {@code capacity + rate × (elapsed + d)}.
 */
public final class LeasedHotKey {
  private static final long CAPACITY = 1_000_000_000_000L;
  private static final Limit PLENTY = Limit.tokenBucket(CAPACITY, Duration.ofSeconds(1));

  private LeasedHotKey() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    List<String> stores = Arrays.asList(o.getOrDefault("stores", "dynamodb,postgresql").split(","));
    int[] threads = Arrays.stream(o.getOrDefault("threads", "1,8,32").split(",")).mapToInt(Integer::parseInt).toArray();
    double seconds = Double.parseDouble(o.getOrDefault("seconds", "3"));
    int rounds = Integer.parseInt(o.getOrDefault("rounds", "3"));
    System.out.println("# uptime: " + LocalRedis.load());
    List<String> table = new ArrayList<>();
    for (String store : stores) {
      try (BenchStore s = BenchStore.start(store)) {
        for (int n : threads) {
          table.add(measure(s.uri(), store, n, seconds, rounds));
        }
      }
    }
    System.out.println();
    System.out.println("| store | threads | plain decisions/s (rounds) | leased decisions/s (rounds) | leased / plain, round by round | checks |");
    System.out.println("|---|---:|---:|---:|---|---|");
    table.forEach(System.out::println);
    System.out.println("# uptime after: " + LocalRedis.load());
  }

  /** One row: plain and leased in alternating rounds, after a round of each to warm up. */
  private static String measure(String uri, String store, int threads, double seconds, int rounds) throws Exception {
    List<Double> plain = new ArrayList<>();
    List<Double> leased = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    for (int r = 0; r <= rounds; r++) { // round 0 warms up both
      boolean leasedFirst = r % 2 == 1;
      for (int turn = 0; turn < 2; turn++) {
        boolean lease = leasedFirst == (turn == 0);
        double rate = once(uri, threads, seconds, lease, problems);
        if (r > 0) {
          (lease ? leased : plain).add(rate);
        }
        System.out.printf(Locale.ROOT, "%s %d threads, round %d, %s: %,.0f/s%n", store, threads, r,
            lease ? "leased" : "plain", rate);
      }
    }
    StringBuilder ratios = new StringBuilder();
    for (int i = 0; i < rounds; i++) {
      ratios.append(i == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.1fx", leased.get(i) / plain.get(i)));
    }
    return String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s |", store, threads, rates(plain), rates(leased),
        ratios, problems.isEmpty() ? "all held" : "**" + String.join("; ", problems) + "**");
  }

  private static String rates(List<Double> rates) {
    double[] sorted = rates.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return String.format(Locale.ROOT, "%,.0f (%s)", sorted[(sorted.length - 1) / 2],
        String.join(" / ", rates.stream().map(x -> String.format(Locale.ROOT, "%,.0f", x)).toList()));
  }

  /** Decisions per second of {@code threads} threads on one fresh key, plain or leased. */
  private static double once(String uri, int threads, double seconds, boolean lease, List<String> problems)
      throws InterruptedException {
    AtomicLong leasedPermits = new AtomicLong();
    AtomicLong returned = new AtomicLong();
    TallyListener accounts = new TallyListener() {
      @Override
      public void onLeaseRefill(String key, long requested, long granted) {
        leasedPermits.addAndGet(granted);
      }

      @Override
      public void onLeaseReturned(String key, long permits, boolean refunded) {
        returned.addAndGet(permits);
      }

      @Override
      public void onLeaseExpired(String key, long permits, boolean refunded) {
        returned.addAndGet(permits);
      }
    };
    try (Tally tally = Tally.builder(uri).listener(accounts).build()) {
      String key = "hot-" + System.nanoTime();
      RateLimiter plain = tally.limiter(key, PLENTY);
      LeasedRateLimiter leased = lease
          ? plain.leased(RedisLimiterComparison.LEASE_BLOCK, RedisLimiterComparison.LEASE_TIME) : null;
      RateLimiter limiter = lease ? leased : plain;
      LongAdder decisions = new LongAdder();
      LongAdder granted = new LongAdder();
      CountDownLatch done = new CountDownLatch(threads);
      long start = System.nanoTime();
      long deadline = start + (long) (seconds * 1e9);
      for (int t = 0; t < threads; t++) {
        Thread w = new Thread(() -> {
          try {
            while (System.nanoTime() < deadline) {
              if (limiter.tryAcquire()) {
                granted.increment();
              }
              decisions.increment();
            }
          } finally {
            done.countDown();
          }
        });
        w.start();
      }
      done.await();
      double elapsed = (System.nanoTime() - start) / 1e9;
      if (leased != null) {
        leased.close();
        if (leasedPermits.get() != granted.sum() + returned.get()) {
          problems.add(String.format(Locale.ROOT, "leased %,d but granted %,d and returned or expired %,d",
              leasedPermits.get(), granted.sum(), returned.get()));
        }
      }
      double d = lease ? RedisLimiterComparison.LEASE_TIME.toNanos() / 1e9 : 0;
      if (granted.sum() > CAPACITY + CAPACITY * (elapsed + d)) { // a rate of CAPACITY a second
        problems.add("granted " + granted.sum() + " over the bound");
      }
      return decisions.sum() / elapsed;
    }
  }
}
