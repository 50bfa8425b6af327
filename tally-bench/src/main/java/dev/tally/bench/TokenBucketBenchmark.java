package dev.tally.bench;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.Bucket;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.RateLimiterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Taking one token from an in-process token bucket: Tally's {@code mem:} limiter against
 * Bucket4j's local bucket and Resilience4j's {@code RateLimiter}, in the same run.
 *
 * <p>Three scenarios, named by prefix, and {@code clock*}, the clock each library reads per
 * decision, for reference:
 *
 * <ul>
 *   <li>{@code handle*}: one limiter, already in hand, shared by every benchmark thread (with
 *       {@code -t 2} both threads take from the same bucket: the contended case). The limit is
 *       10^9 tokens a second, so every request is granted: this is the grant path.
 *   <li>{@code empty*}: the same, on a bucket that has been emptied and refills one token an
 *       hour, so every request is denied: the deny path.
 *   <li>{@code keyed*}: one limiter per key among 10,000, found by key on every call, as a
 *       server limiting per user would. Each thread walks the keys in its own order. Tally is
 *       measured as it is meant to be called, {@code tally.limiter(key, limit).tryAcquire()},
 *       and with its handles kept in a {@code ConcurrentHashMap}, the way the others keep their
 *       buckets. Maps are read with {@code get} and filled with {@code computeIfAbsent} only on a
 *       miss (a bare {@code computeIfAbsent} locks its bin when the key is not first in it).
 *   <li>{@code keyedTallyKept*}: the same two Tally variants with a limit whose state outlives
 *       the time between two requests on a key (see below).
 * </ul>
 *
 * <p>Every limiter allows 10^9 a second: Tally and Bucket4j as a greedily refilled bucket of
 * 10^9, Resilience4j (which has no token bucket) as 10^9 permits per one-second cycle, with a
 * timeout of zero so that it answers at once. Tally drops a bucket's state once the bucket is
 * full again (a full bucket and no state answer alike), and at 10^9 a second a bucket is full a
 * nanosecond after a grant; so with 10,000 keys, each met about once every 10,000 calls, the
 * {@code keyed} Tally variants mostly find no state and store it anew. The {@code keyedTallyKept}
 * variants use 10^9 tokens refilled at one a second instead, so that each request leaves its
 * key's bucket at least a second from full and the state is found again: still every request
 * granted, but the lookup path rather than the create path. See docs/benchmarks.md for commands
 * and results.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
@Threads(1)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class TokenBucketBenchmark {
  static final int KEYS = 10_000;
  /** Prime and so coprime with {@link #KEYS}: a walk that visits every key in a scattered order. */
  static final int STRIDE = 7_919;

  static final long PER_SECOND = 1_000_000_000L;

  private Tally tally;
  private Limit limit;

  // handle in hand: grant path
  private RateLimiter tallyHandle;
  private Bucket bucket4jHandle;
  private io.github.resilience4j.ratelimiter.RateLimiter r4jHandle;

  // handle in hand: deny path
  private RateLimiter tallyEmpty;
  private Bucket bucket4jEmpty;
  private io.github.resilience4j.ratelimiter.RateLimiter r4jEmpty;

  // by key
  private String[] keys;
  private ConcurrentHashMap<String, RateLimiter> tallyHandles;
  private Function<String, RateLimiter> newTallyHandle;
  private ConcurrentHashMap<String, Bucket> buckets;
  private Function<String, Bucket> newBucket;
  private RateLimiterRegistry r4jRegistry;
  private ConcurrentHashMap<String, io.github.resilience4j.ratelimiter.RateLimiter> r4jLimiters;
  private Function<String, io.github.resilience4j.ratelimiter.RateLimiter> newR4jLimiter;

  // by key, Tally with state that outlives the time between two requests on a key
  private Tally tallyKept;
  private Limit limitKept;
  private ConcurrentHashMap<String, RateLimiter> tallyHandlesKept;
  private Function<String, RateLimiter> newTallyHandleKept;

  /** Each thread's position in its walk over the keys. */
  @State(Scope.Thread)
  public static class Cursor {
    int i;

    @Setup(Level.Trial)
    public void setUp(ThreadParams thread) {
      i = (int) ((long) thread.getThreadIndex() * (KEYS / 2 + 1) % KEYS);
    }

    int next() {
      int j = i + STRIDE;
      if (j >= KEYS) {
        j -= KEYS;
      }
      i = j;
      return j;
    }
  }

  @Setup(Level.Trial)
  public void setUp() {
    tally = Tally.open("mem:");
    limit = Limit.tokenBucket(PER_SECOND, Duration.ofSeconds(1));
    RateLimiterConfig r4jConfig = RateLimiterConfig.custom()
        .limitForPeriod((int) PER_SECOND)
        .limitRefreshPeriod(Duration.ofSeconds(1))
        .timeoutDuration(Duration.ZERO)
        .build();

    tallyHandle = tally.limiter("bench:handle", limit);
    bucket4jHandle = bucket4j(PER_SECOND, Duration.ofSeconds(1));
    r4jHandle = io.github.resilience4j.ratelimiter.RateLimiter.of("bench:handle", r4jConfig);

    tallyEmpty = tally.limiter("bench:empty", Limit.tokenBucket(1, Duration.ofHours(1)));
    bucket4jEmpty = bucket4j(1, Duration.ofHours(1));
    r4jEmpty = io.github.resilience4j.ratelimiter.RateLimiter.of("bench:empty",
        RateLimiterConfig.custom()
            .limitForPeriod(1)
            .limitRefreshPeriod(Duration.ofHours(1))
            .timeoutDuration(Duration.ZERO)
            .build());
    check(tallyEmpty.tryAcquire() && !tallyEmpty.tryAcquire(), "Tally bucket not emptied");
    check(bucket4jEmpty.tryConsume(1) && !bucket4jEmpty.tryConsume(1), "Bucket4j bucket not emptied");
    check(r4jEmpty.acquirePermission() && !r4jEmpty.acquirePermission(), "Resilience4j limiter not emptied");

    keys = new String[KEYS];
    for (int i = 0; i < KEYS; i++) {
      keys[i] = "bench:user:" + i;
      int unused = keys[i].hashCode(); // cached in the String, as for keys that come from a request
    }
    tallyHandles = new ConcurrentHashMap<>();
    newTallyHandle = k -> tally.limiter(k, limit);
    buckets = new ConcurrentHashMap<>();
    newBucket = k -> bucket4j(PER_SECOND, Duration.ofSeconds(1));
    r4jRegistry = RateLimiterRegistry.of(r4jConfig);
    r4jLimiters = new ConcurrentHashMap<>();
    newR4jLimiter = k -> io.github.resilience4j.ratelimiter.RateLimiter.of(k, r4jConfig);
    for (String k : keys) { // every key exists before measuring: lookups, not creation
      check(tally.limiter(k, limit).tryAcquire(), "Tally denied");
      check(tallyHandles.computeIfAbsent(k, newTallyHandle).tryAcquire(), "Tally denied");
      check(buckets.computeIfAbsent(k, newBucket).tryConsume(1), "Bucket4j denied");
      check(r4jRegistry.rateLimiter(k).acquirePermission(), "Resilience4j denied");
      check(r4jLimiters.computeIfAbsent(k, newR4jLimiter).acquirePermission(), "Resilience4j denied");
    }

    tallyKept = Tally.open("mem:");
    limitKept = Limit.tokenBucket(PER_SECOND, 1, Duration.ofSeconds(1));
    tallyHandlesKept = new ConcurrentHashMap<>();
    newTallyHandleKept = k -> tallyKept.limiter(k, limitKept);
    for (String k : keys) {
      check(tallyHandlesKept.computeIfAbsent(k, newTallyHandleKept).tryAcquire(), "Tally denied");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    tally.close();
    tallyKept.close();
  }

  private static Bucket bucket4j(long capacity, Duration period) {
    return Bucket.builder()
        .addLimit(Bandwidth.builder().capacity(capacity).refillGreedy(capacity, period).build())
        .build();
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException(what);
    }
  }

  // ------------------------------------------------------------ the clocks they read

  /** Tally's clock: wall-clock nanoseconds since the epoch ({@code TimeSource.system()}). */
  @Benchmark
  public long clockTally() {
    return tally.timeSource().nanos();
  }

  /** Epoch nanoseconds from {@code Instant.now()}, as Tally's system clock once read them. */
  @Benchmark
  public long clockInstantNow() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /** Bucket4j's default clock for a local bucket ({@code TimeMeter.SYSTEM_MILLISECONDS}). */
  @Benchmark
  public long clockCurrentTimeMillis() {
    return System.currentTimeMillis();
  }

  /** Resilience4j's clock. */
  @Benchmark
  public long clockNanoTime() {
    return System.nanoTime();
  }

  // ------------------------------------------------------------ handle in hand, granted

  @Benchmark
  public boolean handleTally() {
    return tallyHandle.tryAcquire();
  }

  @Benchmark
  public boolean handleBucket4j() {
    return bucket4jHandle.tryConsume(1);
  }

  @Benchmark
  public boolean handleResilience4j() {
    return r4jHandle.acquirePermission();
  }

  // ------------------------------------------------------------ handle in hand, denied

  @Benchmark
  public boolean emptyTally() {
    return tallyEmpty.tryAcquire();
  }

  @Benchmark
  public boolean emptyBucket4j() {
    return bucket4jEmpty.tryConsume(1);
  }

  @Benchmark
  public boolean emptyResilience4j() {
    return r4jEmpty.acquirePermission();
  }

  // ------------------------------------------------------------ by key among 10,000

  @Benchmark
  public boolean keyedTally(Cursor c) {
    return tally.limiter(keys[c.next()], limit).tryAcquire();
  }

  @Benchmark
  public boolean keyedTallyCachedHandle(Cursor c) {
    String k = keys[c.next()];
    RateLimiter l = tallyHandles.get(k);
    if (l == null) {
      l = tallyHandles.computeIfAbsent(k, newTallyHandle);
    }
    return l.tryAcquire();
  }

  @Benchmark
  public boolean keyedTallyKept(Cursor c) {
    return tallyKept.limiter(keys[c.next()], limitKept).tryAcquire();
  }

  @Benchmark
  public boolean keyedTallyKeptCachedHandle(Cursor c) {
    String k = keys[c.next()];
    RateLimiter l = tallyHandlesKept.get(k);
    if (l == null) {
      l = tallyHandlesKept.computeIfAbsent(k, newTallyHandleKept);
    }
    return l.tryAcquire();
  }

  @Benchmark
  public boolean keyedBucket4j(Cursor c) {
    String k = keys[c.next()];
    Bucket b = buckets.get(k);
    if (b == null) {
      b = buckets.computeIfAbsent(k, newBucket);
    }
    return b.tryConsume(1);
  }

  @Benchmark
  public boolean keyedResilience4jRegistry(Cursor c) {
    return r4jRegistry.rateLimiter(keys[c.next()]).acquirePermission();
  }

  @Benchmark
  public boolean keyedResilience4j(Cursor c) {
    String k = keys[c.next()];
    io.github.resilience4j.ratelimiter.RateLimiter l = r4jLimiters.get(k);
    if (l == null) {
      l = r4jLimiters.computeIfAbsent(k, newR4jLimiter);
    }
    return l.acquirePermission();
  }
}
