package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What {@code ?replicas=1} costs a call on Redis, against the default ({@code replicas=0}), on
 * the same primary and replica in the same run: a token-bucket decision ({@code decide(1)} on a
 * limit so large that every call is granted, so every call writes) on 1000 keys picked at random
 * and on one hot key, and {@code counters.incr(key)} on 1000 keys and on one, each at 1 and 32
 * threads. Run on demand (docs/benchmarks.md, section "Redis: the cost of replicas=1"):
 *
 * <pre>
 * mvn -B -q package -pl tally-bench -am -DskipTests
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.RedisReplicaCost [--seconds 3] [--rounds 6]
 *     [--threads 1,32] [--ops limiter,incr] [--keys 1000,1]
 * </pre>
 *
 * <p>It starts its own {@code redis-server} primary and one replica ({@code --replicaof}) on free
 * loopback ports, without persistence, waits until the replica is online and a {@code WAIT 1}
 * answers 1, and stops both at the end. Both configurations are open at once, each a
 * {@link Tally} of its own (one connection each); every row runs them in turn for
 * {@code --rounds} rounds of {@code --seconds}, the default first in even rounds and
 * {@code replicas=1} first in odd ones, so that the drift of a shared machine meets both alike.
 * The table gives each configuration's median over the rounds (rate, p50 and p99 each the median
 * of the rounds' figures), the ratio of the median rates, and the median of the round-by-round
 * ratios. Writes ({@code EVALSHA} and {@code INCRBY}) and {@code WAIT}s per call come from the
 * primary's {@code INFO commandstats} (after {@code CONFIG RESETSTAT}); a call that fails (with {@code replicas=1}, a write fewer
 * replicas confirmed in time fails with {@code StoreTimeoutException}) is counted, timed, and
 * does not stop the run.
 */
public final class RedisReplicaCost {
  private static final int SAMPLES = 1 << 18; // latencies kept per thread and run

  private RedisReplicaCost() {}

  /** One configuration's calls: a Tally and what a workload calls on it. */
  private record Config(String name, Tally tally) {}

  /** One row: an operation on a number of keys at a number of threads. */
  private record Shape(String op, int keys, int threads) {
    String label() {
      return (op.equals("limiter") ? "token bucket `decide(1)`" : "`incr(key)`") + ", "
          + (keys == 1 ? "1 hot key" : keys + " keys");
    }
  }

  /** What one configuration did in one run of a shape. */
  private record Run(long calls, double seconds, double p50us, double p99us, long failed, String firstFailure,
      Map<String, Long> commands) {
    double rate() {
      return calls / seconds;
    }

    double perCall(String command) {
      return calls == 0 ? 0 : (double) commands.getOrDefault(command, 0L) / calls;
    }
  }

  /** The calls a thread makes for a shape, on one configuration. */
  private interface Call {
    void run(int key);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    double seconds = Double.parseDouble(options.getOrDefault("seconds", "3"));
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "6"));
    int[] threadCounts = ints(options.getOrDefault("threads", "1,32"));
    int[] keyCounts = ints(options.getOrDefault("keys", "1000,1"));
    List<String> ops = Arrays.asList(options.getOrDefault("ops", "limiter,incr").split(",", -1));
    List<Shape> shapes = new ArrayList<>();
    for (String op : ops) {
      for (int keys : keyCounts) {
        for (int threads : threadCounts) {
          shapes.add(new Shape(op, keys, threads));
        }
      }
    }
    System.out.println("# " + Runtime.getRuntime().availableProcessors() + " processors; before: " + LocalRedis.load());
    try (LocalRedis primary = LocalRedis.start("--repl-diskless-sync-delay", "0");
        LocalRedis replica = LocalRedis.start("--replicaof", "127.0.0.1", Integer.toString(primary.port()))) {
      RedisClient client = RedisClient.create(primary.uri());
      try (StatefulRedisConnection<String, String> admin = connect(client)) {
        RedisCommands<String, String> redis = admin.sync();
        awaitReplica(redis, replica);
        System.out.println("# " + redis.info("server").lines().filter(l -> l.startsWith("redis_version")).findFirst()
            .orElse("") + "; primary " + primary.uri() + ", replica " + replica.uri() + " in sync");
        System.out.println("# " + roundTrips(redis));
        try (Tally plain = Tally.open(primary.uri());
            Tally confirmed = Tally.open(primary.uri() + "?replicas=1")) {
          List<Config> configs = List.of(new Config("default", plain), new Config("replicas=1", confirmed));
          // JIT warm-up, not reported: every configuration in every shape, at the most threads.
          int most = Arrays.stream(threadCounts).max().orElse(32);
          for (Shape s : shapes) {
            for (Config c : configs) {
              measure(redis, c, new Shape(s.op(), s.keys(), most), Math.min(1, seconds));
            }
          }
          StringBuilder table = new StringBuilder();
          table.append("| operation | threads | default calls/s | replicas=1 calls/s | replicas=1 / default (median rates)"
              + " | round by round, median | p50 µs default / replicas=1 | p99 µs default / replicas=1"
              + " | writes per call default / replicas=1 | WAITs per call | writes per WAIT | failed calls |\n");
          table.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
          for (Shape s : shapes) {
            Map<String, List<Run>> runs = new LinkedHashMap<>();
            for (int round = 0; round < rounds; round++) {
              for (int i = 0; i < configs.size(); i++) {
                Config c = configs.get((i + round) % configs.size()); // each goes first in turn
                Run r = measure(redis, c, s, seconds);
                runs.computeIfAbsent(c.name(), n -> new ArrayList<>()).add(r);
                System.out.printf(Locale.ROOT, "%s, %d threads, round %d, %s: %,.0f/s, p50 %.0f µs, p99 %.0f µs,"
                    + " writes %.3f/call, WAIT %.3f/call, failed %d%s%n", s.label(), s.threads(), round, c.name(),
                    r.rate(), r.p50us(), r.p99us(), writes(r), r.perCall("wait"), r.failed(),
                    r.firstFailure() == null ? "" : " (first: " + r.firstFailure() + ")");
              }
            }
            table.append(row(s, runs.get("default"), runs.get("replicas=1"))).append('\n');
          }
          System.out.println();
          System.out.println(table);
        }
      } finally {
        client.shutdown();
      }
    }
    System.out.println("# after: " + LocalRedis.load());
  }

  private static StatefulRedisConnection<String, String> connect(RedisClient client) {
    return client.connect();
  }

  private static int[] ints(String list) {
    return Arrays.stream(list.split(",", -1)).mapToInt(Integer::parseInt).toArray();
  }

  /**
   * Waits (up to a minute) until the primary reports its replica online and a write followed by
   * {@code WAIT 1} is confirmed by it.
   */
  private static void awaitReplica(RedisCommands<String, String> redis, LocalRedis replica) throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      String info = redis.info("replication");
      if (info.contains("connected_slaves:1") && info.contains("state=online")) {
        redis.set("replica-cost:probe", Long.toString(System.nanoTime()));
        if (redis.waitForReplication(1, 1000) == 1) {
          return;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the replica did not come into sync within a minute; primary says: " + info
            + "; replica log: " + replica.log());
      }
      Thread.sleep(100);
    }
  }

  /**
   * The bare costs, one thread on a plain Lettuce connection: a {@code SET}, and a {@code SET}
   * followed by {@code WAIT 1} (one replica round trip more).
   */
  private static String roundTrips(RedisCommands<String, String> redis) {
    int n = 3000;
    long[] set = new long[n];
    long[] setWait = new long[n];
    for (int i = 0; i < 2 * n; i++) { // the first half warms up
      long t0 = System.nanoTime();
      redis.set("replica-cost:rt", Integer.toString(i));
      long t1 = System.nanoTime();
      redis.set("replica-cost:rt", Integer.toString(i));
      long count = redis.waitForReplication(1, 1000);
      long t2 = System.nanoTime();
      if (count != 1) {
        throw new IllegalStateException("WAIT 1 answered " + count);
      }
      if (i >= n) {
        set[i - n] = t1 - t0;
        setWait[i - n] = t2 - t1;
      }
    }
    Arrays.sort(set);
    Arrays.sort(setWait);
    return String.format(Locale.ROOT, "plain Lettuce, one thread: SET p50 %.0f µs (p99 %.0f); SET + WAIT 1 p50 %.0f µs"
        + " (p99 %.0f)", LocalRedis.percentile(set, 0.5) / 1e3, LocalRedis.percentile(set, 0.99) / 1e3,
        LocalRedis.percentile(setWait, 0.5) / 1e3, LocalRedis.percentile(setWait, 0.99) / 1e3);
  }

  private static final AtomicLong RUNS = new AtomicLong();

  /** {@code shape.threads()} threads calling for {@code seconds}, each on a key picked at random. */
  private static Run measure(RedisCommands<String, String> redis, Config config, Shape shape, double seconds)
      throws InterruptedException {
    String prefix = "rc" + RUNS.incrementAndGet() + "-" + config.name() + "-";
    Call call;
    if (shape.op().equals("limiter")) {
      Limit limit = Limit.tokenBucket(1_000_000_000_000L, Duration.ofHours(1)); // always grants
      RateLimiter[] limiters = new RateLimiter[shape.keys()];
      for (int i = 0; i < limiters.length; i++) {
        limiters[i] = config.tally().limiter(prefix + i, limit);
      }
      call = k -> {
        Decision d = limiters[k].decide(1);
        if (!d.allowed()) {
          throw new IllegalStateException("denied by a limit that always grants: " + d);
        }
      };
    } else {
      Counters counters = config.tally().counters("replica-cost");
      String[] keys = new String[shape.keys()];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = prefix + i;
      }
      call = k -> counters.incr(keys[k]);
    }
    int threads = shape.threads();
    long[][] latencies = new long[threads][];
    long[] counts = new long[threads];
    AtomicLong failed = new AtomicLong();
    AtomicReference<String> firstFailure = new AtomicReference<>();
    AtomicLong firstStart = new AtomicLong(Long.MAX_VALUE);
    AtomicLong lastEnd = new AtomicLong();
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(threads);
    long runNanos = (long) (seconds * 1e9);
    redis.configResetstat();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread worker = new Thread(() -> {
        long[] lat = new long[SAMPLES];
        int n = 0;
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        ready.countDown();
        try {
          go.await();
          long start = System.nanoTime();
          firstStart.accumulateAndGet(start, Math::min);
          long deadline = start + runNanos;
          long now = start;
          while (now < deadline) {
            int k = shape.keys() == 1 ? 0 : rnd.nextInt(shape.keys());
            try {
              call.run(k);
            } catch (RuntimeException e) {
              failed.incrementAndGet();
              firstFailure.compareAndSet(null, e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            long end = System.nanoTime();
            if (n < lat.length) {
              lat[n] = end - now;
            }
            n++;
            now = end;
          }
          lastEnd.accumulateAndGet(now, Math::max);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } finally {
          latencies[thread] = Arrays.copyOf(lat, Math.min(n, lat.length));
          counts[thread] = n;
          done.countDown();
        }
      }, "bench-" + t);
      worker.start();
    }
    ready.await();
    go.countDown();
    done.await();
    Map<String, Long> commands = LocalRedis.commandStats(redis);
    long calls = Arrays.stream(counts).sum();
    long[] all = Arrays.stream(latencies).flatMapToLong(Arrays::stream).sorted().toArray();
    double elapsed = (lastEnd.get() - firstStart.get()) / 1e9;
    return new Run(calls, elapsed, LocalRedis.percentile(all, 0.50) / 1e3, LocalRedis.percentile(all, 0.99) / 1e3,
        failed.get(), firstFailure.get(), commands);
  }

  /** Writes per call: script runs (limiters) and {@code INCRBY}s (counters), each one a Redis write. */
  private static double writes(Run r) {
    return r.perCall("evalsha") + r.perCall("eval") + r.perCall("incrby");
  }

  /** Writes each {@code WAIT} confirmed, on average (0 without {@code WAIT}s). */
  private static double writesPerWait(Run r) {
    double waits = r.perCall("wait");
    return waits == 0 ? 0 : writes(r) / waits;
  }

  private static String row(Shape s, List<Run> base, List<Run> replicas) {
    double[] paired = new double[Math.min(base.size(), replicas.size())];
    for (int i = 0; i < paired.length; i++) {
      paired[i] = replicas.get(i).rate() / base.get(i).rate();
    }
    double baseRate = median(base.stream().mapToDouble(Run::rate).toArray());
    double replicaRate = median(replicas.stream().mapToDouble(Run::rate).toArray());
    long failed = base.stream().mapToLong(Run::failed).sum() + replicas.stream().mapToLong(Run::failed).sum();
    long calls = base.stream().mapToLong(Run::calls).sum() + replicas.stream().mapToLong(Run::calls).sum();
    return String.format(Locale.ROOT, "| %s | %d | %,.0f | %,.0f | %.2f | %.2f | %.0f / %.0f | %.0f / %.0f"
        + " | %.3f / %.3f | %.3f | %.1f | %,d of %,d |", s.label(), s.threads(), baseRate, replicaRate, replicaRate / baseRate,
        median(paired), median(base.stream().mapToDouble(Run::p50us).toArray()),
        median(replicas.stream().mapToDouble(Run::p50us).toArray()), median(base.stream().mapToDouble(Run::p99us).toArray()),
        median(replicas.stream().mapToDouble(Run::p99us).toArray()),
        median(base.stream().mapToDouble(RedisReplicaCost::writes).toArray()),
        median(replicas.stream().mapToDouble(RedisReplicaCost::writes).toArray()),
        median(replicas.stream().mapToDouble(r -> r.perCall("wait")).toArray()),
        median(replicas.stream().mapToDouble(RedisReplicaCost::writesPerWait).toArray()), failed, calls);
  }

  /** The median (the mean of the middle two of an even number). */
  private static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    return n == 0 ? Double.NaN : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
}
