package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyListener;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.distributed.proxy.optimization.Optimizations;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Rate limiting on one Redis, in one run, by five clients: the seed's WATCH/MULTI token bucket
 * ported to Lettuce ({@link SeedTokenBucket}), Bucket4j 8.14.0's Lettuce proxy manager with and
 * without its batching optimization, and Tally's token bucket (plain, with the deny cache, and
 * leased: {@link dev.tally.RateLimiter#leased}, blocks of up to 1,000, 100 ms) and GCRA; then Tally's
 * {@code incr} against {@code redis-benchmark -t incr} at the same concurrency. Run on demand
 * (docs/benchmarks.md, section Redis):
 *
 * <pre>
 * mvn -B -q package -pl tally-bench -am -DskipTests
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.RedisLimiterComparison [--seconds 3]
 *     [--workloads granting,denying] [--threads 1,8,32] [--keys 1,1000] [--only "Tally GCRA;Bucket4j"]
 *     [--parts limiters,incr] [--repeat 1] [--uri redis://127.0.0.1:6379] [--processes 4]
 * </pre>
 *
 * With {@code --processes P} each client runs in P child JVMs at once on one key, and the
 * report is their summed rate ({@link HotKeyProcesses}); {@code --keys} and {@code --parts} do not
 * apply then.
 *
 * With {@code --repeat N} the clients of each row take N turns, one after the other, each round
 * starting with the next client (so that none always follows the same one), and the table shows
 * each client's run of median rate, noting all N rates; after each row it prints every client's
 * rate over Bucket4j batching's in the same round, with the median of those paired ratios.
 * Without {@code --uri} it starts its own {@code redis-server} on a free loopback port (no
 * persistence) and stops it at the end. In each workload every limiter has the same limit:
 * <em>granting</em> has a burst and a rate so large that every request is granted (each decision
 * writes the new state: what a limiter does most of the time in production), <em>denying</em> a
 * burst of 100 and 1000 per second, far below the offered rate, so most requests are denied.
 * Every run checks, per key, that no more was granted than {@code capacity + rate * elapsed}.
 * Redis commands are counted with {@code CONFIG RESETSTAT} and {@code INFO commandstats} around
 * each run (scripts' inner commands included).
 */
public final class RedisLimiterComparison {
  /** The limit every client enforces in a run. */
  record Workload(String name, long capacity, long ratePerSecond) {
    static Workload named(String name) {
      return switch (name) {
        case "granting" -> new Workload(name, 1_000_000_000L, 1_000_000_000L);
        case "denying" -> new Workload(name, 100, 1000);
        default -> throw new IllegalArgumentException("unknown workload " + name + "; use granting or denying");
      };
    }
  }

  private RedisLimiterComparison() {}

  /** One client under test. */
  interface Limiter extends AutoCloseable {
    boolean tryAcquire(int thread, String key) throws Exception;

    /** Extra facts for the report (attempts, local answers). */
    @SuppressWarnings("UnusedVariable") // the clients that have something to say read it
    default String note(long decisions) {
      return "";
    }

    /**
     * Seconds of rate the client's guarantee adds to {@code capacity + rate * elapsed}: a leased
     * handle's lease time.
     */
    default double slackSeconds() {
      return 0;
    }

    @Override
    default void close() {}
  }

  private record Result(String workload, String name, int threads, int keys, long decisions, double seconds, double p50us,
      double p99us, Map<String, Long> commands, long granted, long worstKeyGranted, double allowedPerKey,
      String note) {
    double rate() {
      return decisions / seconds;
    }

    boolean withinLimit() {
      return worstKeyGranted <= allowedPerKey;
    }

    long total() {
      return commands.values().stream().mapToLong(Long::longValue).sum();
    }

    long scripts() {
      return commands.getOrDefault("evalsha", 0L) + commands.getOrDefault("eval", 0L);
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    double seconds = Double.parseDouble(options.getOrDefault("seconds", "3"));
    int repeat = Integer.parseInt(options.getOrDefault("repeat", "1"));
    int[] threadCounts = Arrays.stream(options.getOrDefault("threads", "1,8,32").split(","))
        .mapToInt(Integer::parseInt).toArray();
    LocalRedis server = null;
    String uri = options.get("uri");
    if (uri == null) {
      server = LocalRedis.start();
      uri = server.uri();
    }
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> admin = connect(client)) {
      RedisCommands<String, String> redis = admin.sync();
      System.out.println("# " + redis.info("server").lines().filter(l -> l.startsWith("redis_version")).findFirst().orElse("")
          + ", " + uri + ", uptime: " + LocalRedis.load());
      List<Result> results = new ArrayList<>();
      List<String> names = List.of("seed WATCH/MULTI", "Bucket4j", "Bucket4j batching", "Tally token bucket",
          "Tally GCRA", "Tally token bucket, denyCache", "Tally token bucket, leased");
      if (options.containsKey("only")) {
        // ';' separates names when one holds a comma ("Tally token bucket, leased")
        String only = options.get("only");
        List<String> wanted = Arrays.stream(only.split(only.contains(";") ? ";" : ",")).map(String::strip).toList();
        names = names.stream().filter(wanted::contains).toList();
        if (names.isEmpty()) {
          throw new IllegalArgumentException("--only names none of the clients; separate names with ';' when"
              + " one holds a comma");
        }
      }
      if (options.containsKey("processes")) {
        HotKeyProcesses.run(options, uri, names);
        return;
      }
      int[] keyCounts = Arrays.stream(options.getOrDefault("keys", "1,1000").split(","))
          .mapToInt(Integer::parseInt).toArray();
      List<Workload> workloads = Arrays.stream(options.getOrDefault("workloads", "granting,denying").split(","))
          .map(Workload::named).toList();
      List<String> parts = Arrays.asList(options.getOrDefault("parts", "limiters,incr").split(","));
      if (!parts.contains("limiters")) {
        names = List.of();
      }
      // JIT warm-up, not reported: every client in the shapes it will run, the most demanding
      // (all threads on one key, where calls share batches) for three rounds of two seconds, so
      // that no client still compiles its hot paths during its first measured row.
      int mostThreads = Arrays.stream(threadCounts).max().orElse(32);
      for (String name : names) {
        try (Limiter warm = open(name, client, uri, Math.max(32, mostThreads), workloads.get(0))) {
          measure(redis, workloads.get(0), name, warm, 8, 10, Math.min(1, seconds));
          for (int round = 0; round < 3; round++) { // compilers get little CPU on a busy small machine
            measure(redis, workloads.get(0), name, warm, mostThreads, 1, Math.min(2, seconds));
          }
        }
      }
      for (Workload workload : workloads) {
        for (int keys : keyCounts) {
          for (int threads : threadCounts) {
            Map<String, List<Result>> repeats = new LinkedHashMap<>();
            for (int round = 0; round < repeat; round++) { // clients take turns, so drift hits all alike
              for (int i = 0; i < names.size(); i++) {
                String name = names.get((i + round) % names.size()); // and each goes first in turn
                if (name.endsWith("denyCache") && (keys != 1 || !workload.name().equals("denying"))) {
                  continue; // the guard only ever answers denials
                }
                try (Limiter limiter = open(name, client, uri, threads, workload)) {
                  Result r = measure(redis, workload, name, limiter, threads, keys, seconds);
                  repeats.computeIfAbsent(name, n -> new ArrayList<>()).add(r);
                  System.out.println(row(r));
                }
              }
            }
            repeats.values().forEach(runs -> results.add(median(runs)));
            if (repeat > 1) {
              System.out.println(pairedRatios(repeats, "Bucket4j batching", Result::rate, "round by round"));
            }
          }
        }
      }
      if (!results.isEmpty()) {
        System.out.println();
        System.out.println(table(results));
        System.out.println();
        for (int threads : threadCounts) {
          if (threads > 1) {
            System.out.printf(Locale.ROOT, "# hand-off ceiling, %d blocking threads, no Redis: %,.0f wake-ups/s%n", threads,
                handOffCeiling(threads, seconds));
          }
        }
        System.out.println();
      }
      if (parts.contains("incr") && !options.containsKey("only")) {
        System.out.println(incr(uri, threadCounts, seconds));
      }
      System.out.println("# uptime after: " + LocalRedis.load());
    } finally {
      client.shutdown();
      if (server != null) {
        server.close();
      }
    }
  }

  /**
   * The run of median rate among a client's repeats (the lower middle one of an even number),
   * noting every repeat's rate; the table shows it, and every repeat's row was printed as it ran.
   */
  private static Result median(List<Result> runs) {
    List<Result> byRate = new ArrayList<>(runs);
    byRate.sort(java.util.Comparator.comparingDouble(Result::rate));
    Result m = byRate.get((byRate.size() - 1) / 2);
    if (runs.size() == 1) {
      return m;
    }
    String rates = String.join(" / ", runs.stream().map(r -> String.format(Locale.ROOT, "%,.0f", r.rate())).toList());
    String note = (m.note().isEmpty() ? "" : m.note() + "; ") + "median of " + runs.size() + " runs: " + rates
        + (runs.stream().allMatch(Result::withinLimit) ? ", all within limit" : ", **a run went over its limit**");
    return new Result(m.workload(), m.name(), m.threads(), m.keys(), m.decisions(), m.seconds(), m.p50us(), m.p99us(),
        m.commands(), m.granted(), m.worstKeyGranted(), m.allowedPerKey(), note);
  }

  /**
   * Each client's rate over the reference client's in the same round, and the median of those
   * ratios. A round's turns run back to back, so its ratio is the one least moved by the drift of
   * a shared machine, which can shift every client's rate by a third within minutes.
   */
  static <R> String pairedRatios(Map<String, List<R>> repeats, String reference, ToDoubleFunction<R> rate,
      String what) {
    List<R> base = repeats.get(reference);
    if (base == null) {
      return "";
    }
    StringBuilder out = new StringBuilder();
    repeats.forEach((name, runs) -> {
      if (name.equals(reference)) {
        return;
      }
      double[] ratios = new double[Math.min(runs.size(), base.size())];
      for (int i = 0; i < ratios.length; i++) {
        ratios[i] = rate.applyAsDouble(runs.get(i)) / rate.applyAsDouble(base.get(i));
      }
      double[] sorted = ratios.clone();
      Arrays.sort(sorted);
      double median = sorted.length % 2 == 1 ? sorted[sorted.length / 2]
          : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
      out.append(String.format(Locale.ROOT, "# %s / %s, %s: %s; median %.2f, lowest %.2f%n", name, reference, what,
          String.join(" ", Arrays.stream(ratios).mapToObj(r -> String.format(Locale.ROOT, "%.2f", r)).toList()), median,
          sorted[0]));
    });
    return out.toString();
  }

  private static StatefulRedisConnection<String, String> connect(RedisClient client) {
    return client.connect();
  }

  static Limiter open(String name, RedisClient client, String uri, int threads, Workload workload) {
    return open(name, client, uri, threads, workload, new TallyListener() { });
  }

  /** The client {@code name}; a Tally client reports its events to {@code listener}. */
  static Limiter open(String name, RedisClient client, String uri, int threads, Workload workload,
      TallyListener listener) {
    long capacity = workload.capacity();
    long rate = workload.ratePerSecond();
    switch (name) {
      case "seed WATCH/MULTI": {
        SeedTokenBucket[] perThread = new SeedTokenBucket[threads];
        for (int t = 0; t < threads; t++) {
          perThread[t] = SeedTokenBucket.forThread(client, (double) rate, (double) capacity);
        }
        return new Limiter() {
          @Override
          public boolean tryAcquire(int thread, String key) throws Exception {
            return perThread[thread].tokenBucket(1, key);
          }

          @Override
          public String note(long decisions) {
            long attempts = Arrays.stream(perThread).mapToLong(b -> b.attempts).sum();
            return String.format(Locale.ROOT, "%.2f attempts/decision (4-5 round trips each)", (double) attempts / decisions);
          }

          @Override
          public void close() {
            Arrays.stream(perThread).forEach(SeedTokenBucket::close);
          }
        };
      }
      case "Bucket4j":
      case "Bucket4j batching": {
        StatefulRedisConnection<byte[], byte[]> connection = client.connect(ByteArrayCodec.INSTANCE);
        ProxyManager<byte[]> proxies = Bucket4jLettuce.casBasedBuilder(connection)
            .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
            .build();
        BucketConfiguration config = BucketConfiguration.builder()
            .addLimit(limit -> limit.capacity(capacity).refillGreedy(rate, Duration.ofSeconds(1)))
            .build();
        boolean batching = name.endsWith("batching");
        Map<String, Bucket> buckets = new ConcurrentHashMap<>();
        return new Limiter() {
          @Override
          public boolean tryAcquire(int thread, String key) {
            return buckets.computeIfAbsent(key, k -> batching
                ? proxies.builder().withOptimization(Optimizations.batching()).build(k.getBytes(StandardCharsets.UTF_8), () -> config)
                : proxies.builder().build(k.getBytes(StandardCharsets.UTF_8), () -> config)).tryConsume(1);
          }

          @Override
          public void close() {
            connection.close();
          }
        };
      }
      case "Tally token bucket, leased": {
        Tally tally = Tally.builder(uri).listener(listener).build();
        Limit limit = Limit.tokenBucket(capacity, rate, Duration.ofSeconds(1));
        Map<String, LeasedRateLimiter> limiters = new ConcurrentHashMap<>();
        return new Limiter() {
          @Override
          public boolean tryAcquire(int thread, String key) {
            return limiters.computeIfAbsent(key, k -> tally.limiter(k, limit).leased(LEASE_BLOCK, LEASE_TIME))
                .tryAcquire();
          }

          @Override
          public double slackSeconds() {
            return LEASE_TIME.toNanos() / 1e9;
          }

          @Override
          public String note(long decisions) {
            long stock = limiters.values().stream().mapToLong(LeasedRateLimiter::stock).sum();
            return "blocks of up to " + LEASE_BLOCK + ", lease " + LEASE_TIME.toMillis() + " ms; " + stock
                + " in stock at the end";
          }

          @Override
          public void close() {
            limiters.values().forEach(LeasedRateLimiter::close);
            tally.close();
          }
        };
      }
      default: {
        boolean guard = name.endsWith("denyCache");
        Tally tally = Tally.builder(guard ? uri + "?denyCache=true" : uri).listener(listener).build();
        Limit limit = name.contains("GCRA") ? Limit.gcra(capacity - 1, rate, Duration.ofSeconds(1))
            : Limit.tokenBucket(capacity, rate, Duration.ofSeconds(1));
        Map<String, RateLimiter> limiters = new ConcurrentHashMap<>();
        return new Limiter() {
          @Override
          public boolean tryAcquire(int thread, String key) {
            return limiters.computeIfAbsent(key, k -> tally.limiter(k, limit)).tryAcquire();
          }

          @Override
          public void close() {
            tally.close();
          }
        };
      }
    }
  }

  private static final AtomicLong RUNS = new AtomicLong();
  /** The leased contender's largest block and lease time. */
  static final long LEASE_BLOCK = 1_000;
  static final Duration LEASE_TIME = Duration.ofMillis(100);

  private static Result measure(RedisCommands<String, String> redis, Workload workload, String name, Limiter limiter, int threads,
      int keyCount, double seconds) throws InterruptedException {
    String prefix = "bench" + RUNS.incrementAndGet() + "-" + System.nanoTime() + ":";
    String[] keys = new String[keyCount];
    for (int i = 0; i < keyCount; i++) {
      keys[i] = prefix + i;
    }
    AtomicLongArray grantedPerKey = new AtomicLongArray(keyCount);
    long[][] latencies = new long[threads][];
    long[] counts = new long[threads];
    AtomicLong firstStart = new AtomicLong(Long.MAX_VALUE);
    AtomicLong lastEnd = new AtomicLong();
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch go = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(threads);
    long runNanos = (long) (seconds * 1e9);
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    redis.configResetstat();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread worker = new Thread(() -> {
        long[] lat = new long[1 << 20];
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
            int k = keyCount == 1 ? 0 : rnd.nextInt(keyCount);
            boolean ok = limiter.tryAcquire(thread, keys[k]);
            long end = System.nanoTime();
            if (ok) {
              grantedPerKey.incrementAndGet(k);
            }
            lat[n++ & (lat.length - 1)] = end - now;
            now = end;
          }
          lastEnd.accumulateAndGet(now, Math::max);
        } catch (Throwable e) {
          failures.add(e);
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
    if (!failures.isEmpty()) {
      throw new IllegalStateException(name + " failed", failures.get(0));
    }
    Map<String, Long> commands = LocalRedis.commandStats(redis);
    long decisions = Arrays.stream(counts).sum();
    long[] all = Arrays.stream(latencies).flatMapToLong(Arrays::stream).sorted().toArray();
    double elapsed = (lastEnd.get() - firstStart.get()) / 1e9;
    long granted = 0;
    long worst = 0;
    for (int i = 0; i < keyCount; i++) {
      granted += grantedPerKey.get(i);
      worst = Math.max(worst, grantedPerKey.get(i));
    }
    return new Result(workload.name(), name, threads, keyCount, decisions, elapsed,
        LocalRedis.percentile(all, 0.50) / 1e3, LocalRedis.percentile(all, 0.99) / 1e3, commands, granted, worst,
        workload.capacity() + workload.ratePerSecond() * (elapsed + limiter.slackSeconds()), limiter.note(decisions));
  }



  private static String row(Result r) {
    return String.format(Locale.ROOT, "| %s | %s | %d | %d | %,.0f | %.0f | %.0f | %.2f | %.2f | %s | %,d / %,.0f | %s |",
        r.workload(), r.name(), r.threads(), r.keys(), r.rate(), r.p50us(), r.p99us(), (double) r.total() / r.decisions(),
        (double) r.scripts() / r.decisions(), perDecision(r), r.worstKeyGranted(), r.allowedPerKey(),
        (r.withinLimit() ? "yes" : "**NO**") + (r.note().isEmpty() ? "" : "; " + r.note()));
  }

  private static String perDecision(Result r) {
    StringBuilder b = new StringBuilder();
    r.commands().entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(6).forEach(e -> {
      if (b.length() > 0) {
        b.append(' ');
      }
      b.append(e.getKey()).append('=').append(String.format(Locale.ROOT, "%.2f", (double) e.getValue() / r.decisions()));
    });
    return b.toString();
  }

  private static String table(List<Result> results) {
    StringBuilder b = new StringBuilder();
    b.append("| workload | client | threads | keys | decisions/s | p50 µs | p99 µs | Redis commands/decision | scripts/decision"
        + " | commands/decision by name | granted (worst key) / allowed per key | within limit |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Result r : results) {
      b.append(row(r)).append('\n');
    }
    return b.toString();
  }

  /** Tally's incr (INCRBY) against redis-benchmark -t incr at the same concurrency. */
  private static String incr(String uri, int[] threadCounts, double seconds)
      throws Exception {
    String host = uri.replaceFirst("redis://", "").split(":", -1)[0];
    String port = uri.replaceFirst("redis://", "").split(":", -1)[1].replaceAll("[^0-9].*", "");
    StringBuilder b = new StringBuilder();
    b.append("| concurrency | redis-benchmark -t incr -c N (req/s) | Tally incr, N threads on one connection (req/s) | ratio"
        + " | Tally incr async, N in flight, each reply sends the next (req/s) | ratio |\n|---|---|---|---|---|---|\n");
    try (Tally tally = Tally.open(uri)) {
      Counters counters = tally.counters("bench-incr");
      for (int i = 0; i < 20_000; i++) {
        counters.incr("warm"); // JIT
      }
      for (int c : threadCounts) {
        double benchmark = redisBenchmark(host, port, c, (long) (Math.max(20_000, 60_000 * c) * seconds / 3));
        double threaded = incrThreads(counters, c, seconds);
        double async = incrAsync(counters, c, seconds);
        b.append(String.format(Locale.ROOT, "| %d | %,.0f | %,.0f | %.2f | %,.0f | %.2f |%n", c, benchmark, threaded,
            threaded / benchmark, async, async / benchmark));
      }
    }
    return b.toString();
  }

  private static double redisBenchmark(String host, String port, int clients, long requests) throws Exception {
    Process p = new ProcessBuilder("redis-benchmark", "-h", host, "-p", port, "-t", "incr", "-c",
        Integer.toString(clients), "-n", Long.toString(requests), "-q").redirectErrorStream(true).start();
    String out;
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      out = r.lines().reduce("", (a, x) -> a + "\n" + x);
    }
    p.waitFor();
    Matcher m = Pattern.compile("INCR: ([0-9.]+) requests per second").matcher(out.replace("\r", "\n"));
    double last = Double.NaN;
    while (m.find()) {
      last = Double.parseDouble(m.group(1));
    }
    if (Double.isNaN(last)) {
      throw new IllegalStateException("unexpected redis-benchmark output: " + out);
    }
    return last;
  }

  private static double incrThreads(Counters counters, int threads, double seconds) throws InterruptedException {
    return loop(threads, seconds, () -> counters.incr("k"));
  }

  /** Calls per second of {@code threads} threads each calling {@code call} in a loop for {@code seconds}. */
  private static double loop(int threads, double seconds, Runnable call) throws InterruptedException {
    AtomicLong total = new AtomicLong();
    long start = System.nanoTime();
    long deadline = start + (long) (seconds * 1e9);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread w = new Thread(() -> {
        long n = 0;
        while (System.nanoTime() < deadline) {
          call.run();
          n++;
        }
        total.addAndGet(n);
      });
      workers.add(w);
      w.start();
    }
    for (Thread w : workers) {
      w.join();
    }
    return total.get() / ((System.nanoTime() - start) / 1e9);
  }

  /**
   * One thread's worth of asynchronous increments kept {@code inFlight} deep the way
   * {@code redis-benchmark} keeps its connections busy: each reply sends the next request, from
   * the thread that received it, so no thread waits on another.
   */
  private static double incrAsync(Counters counters, int inFlight, double seconds) throws InterruptedException {
    AtomicLong done = new AtomicLong();
    CountDownLatch finished = new CountDownLatch(inFlight);
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    long start = System.nanoTime();
    long deadline = start + (long) (seconds * 1e9);
    for (int i = 0; i < inFlight; i++) {
      new IncrChain(counters, deadline, done, finished, failures).next();
    }
    finished.await();
    if (!failures.isEmpty()) {
      throw new IllegalStateException("asynchronous incr failed", failures.get(0));
    }
    return done.get() / ((System.nanoTime() - start) / 1e9);
  }

  /** Sends an increment, and the next one when its reply comes, until the deadline. */
  private record IncrChain(Counters counters, long deadline, AtomicLong done, CountDownLatch finished,
      List<Throwable> failures) {
    void next() {
      while (System.nanoTime() < deadline) {
        CompletableFuture<Long> reply = counters.async().incr("a").toCompletableFuture();
        if (!reply.isDone()) {
          reply.whenComplete((value, failure) -> {
            if (count(failure)) {
              next();
            }
          });
          return;
        }
        if (!count(reply.handle((value, failure) -> failure).join())) { // completed at once: loop rather than recurse
          return;
        }
      }
      finished.countDown();
    }

    private boolean count(Throwable failure) {
      if (failure != null) {
        failures.add(failure);
        finished.countDown();
        return false;
      }
      done.incrementAndGet();
      return true;
    }
  }

  /**
   * What blocking callers can do on this machine at all, with no Redis and no client library:
   * {@code threads} threads each wait on a future that one other thread completes, in batches of
   * whoever is waiting, as a client's I/O thread completes the replies it reads. Every blocking
   * client in this comparison pays one such wake-up per decision on top of its own work.
   */
  private static double handOffCeiling(int threads, double seconds) throws InterruptedException {
    LinkedBlockingQueue<CompletableFuture<Void>> waiting = new LinkedBlockingQueue<>();
    Thread completer = new Thread(() -> {
      List<CompletableFuture<Void>> batch = new ArrayList<>();
      try {
        while (true) {
          batch.add(waiting.take());
          waiting.drainTo(batch);
          batch.forEach(f -> f.complete(null));
          batch.clear();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "hand-off completer");
    completer.setDaemon(true);
    completer.start();
    try {
      return loop(threads, seconds, () -> {
        CompletableFuture<Void> f = new CompletableFuture<>();
        waiting.add(f);
        f.join();
      });
    } finally {
      completer.interrupt();
    }
  }
}
