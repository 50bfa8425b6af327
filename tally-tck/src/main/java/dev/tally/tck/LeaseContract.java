package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Leased limiters ({@link RateLimiter#leased}) on every store: several leases of one limiter
 * stand for several processes, each with its own stock, on the fixture's manual clock. The cases
 * check the guarantees docs/limiters.md states: a token bucket grants at most
 * {@code capacity + rate × (T + d)} in any interval of length {@code T}; a window grants at most
 * its limit in each window, exactly; no permit is granted twice; a closed lease returns its stock.
 */
public abstract class LeaseContract extends TallyFixture {
  private static final long SECOND = 1_000_000_000L;
  private final List<LeasedRateLimiter> leases = new ArrayList<>();

  private String name() {
    return "tck-lease-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private LeasedRateLimiter lease(String name, Limit limit, long maxBlock, Duration leaseTime) {
    LeasedRateLimiter l = tally.limiter(name, limit).leased(maxBlock, leaseTime);
    leases.add(l);
    return l;
  }

  @AfterEach
  void closeLeases() {
    leases.forEach(LeasedRateLimiter::close);
  }

  /** Skips a timeline a store deciding on its server's own clock cannot follow. */
  private void assumeKitClock() {
    StoreConfiguration c = configuration();
    Assumptions.assumeTrue(c == null || c.decidesAtTheKitsClock(),
        () -> "needs decisions at the kit's clock; " + c + " decides on its server's clock");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.tally.tck.LimiterContract#algorithms")
  public void noPermitIsGrantedTwiceAndClosingReturnsTheStock(String kind, Limit limit) {
    String name = name();
    List<LeasedRateLimiter> processes = new ArrayList<>();
    for (int p = 0; p < 3; p++) {
      processes.add(lease(name, limit, 4, Duration.ofMinutes(1)));
    }
    int granted = 0;
    for (int i = 0; granted < 13; i++) {
      if (processes.get(i % 3).tryAcquire()) {
        granted++;
      }
      assertThat(i).as("attempts before 13 grants").isLessThan(200);
    }
    processes.forEach(LeasedRateLimiter::close);
    RateLimiter plain = tally.limiter(name, limit);
    assertThat(plain.available()).as("every unused permit came back on close")
        .isEqualTo(LimiterContract.CAPACITY - granted);

    List<LeasedRateLimiter> again = new ArrayList<>();
    for (int p = 0; p < 3; p++) {
      again.add(lease(name, limit, 4, Duration.ofMinutes(1)));
    }
    int denialsInARow = 0;
    for (int i = 0; denialsInARow < 6 && i < 400; i++) {
      if (again.get(i % 3).tryAcquire()) {
        granted++;
        denialsInARow = 0;
      } else {
        denialsInARow++;
      }
    }
    assertThat(granted).as("grants from the leases, once the stocks are spent").isEqualTo(LimiterContract.CAPACITY);
    again.forEach(LeasedRateLimiter::close);
    assertThat(plain.available()).isZero();
  }

  @Test
  public void concurrentLeasesGrantEachPermitOnce() {
    String name = name();
    Limit limit = Limit.tokenBucket(100, Duration.ofDays(3_650));
    LeasedRateLimiter a = lease(name, limit, 16, Duration.ofMinutes(1));
    LeasedRateLimiter b = lease(name, limit, 16, Duration.ofMinutes(1));
    AtomicInteger granted = new AtomicInteger();
    Concurrently.run(8, 30, (t, i) -> {
      if ((t % 2 == 0 ? a : b).tryAcquire()) {
        granted.incrementAndGet();
      }
    });
    assertThat(granted.get()).isPositive().isLessThanOrEqualTo(100);
    a.close();
    b.close();
    assertThat(tally.limiter(name, limit).available()).as("consumed: exactly the permits granted")
        .isEqualTo(100 - granted.get());
  }

  @Test
  public void aTokenBucketGrantsAtMostCapacityPlusRateTimesIntervalPlusLeaseTime() {
    assumeKitClock();
    long capacity = 40;
    long unitNanos = SECOND; // 40 per 40 s: one unit a second
    long leaseNanos = 3 * SECOND;
    String name = name();
    Limit limit = Limit.tokenBucket(capacity, Duration.ofSeconds(40));
    List<LeasedRateLimiter> processes = new ArrayList<>();
    for (int p = 0; p < 3; p++) {
      processes.add(lease(name, limit, 8, Duration.ofNanos(leaseNanos)));
    }
    List<Long> grants = new ArrayList<>();
    Random random = new Random(28);
    for (int step = 0; step < 400; step++) {
      clock.advanceNanos(random.nextInt(600) * 1_000_000L);
      LeasedRateLimiter p = processes.get(random.nextInt(3));
      for (int n = random.nextInt(4); n >= 0; n--) {
        long at = clock.nanos();
        if (p.tryAcquire()) {
          grants.add(at);
        }
      }
    }
    assertThat(grants.size()).as("the timeline refilled the bucket more than once").isGreaterThan((int) (2 * capacity));
    Collections.sort(grants);
    for (int i = 0; i < grants.size(); i++) {
      for (int j = i; j < grants.size(); j++) {
        long span = grants.get(j) - grants.get(i);
        long bound = capacity + (span + leaseNanos) / unitNanos;
        assertThat((long) (j - i + 1)).as("grants from %d to %d ns", grants.get(i), grants.get(j))
            .isLessThanOrEqualTo(bound);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("windows")
  public void aWindowGrantsAtMostItsLimitInEachWindowExactly(String kind, Limit limit) {
    assumeKitClock();
    long windowNanos = 60 * SECOND;
    long limitPerWindow = limit.limit();
    String name = name();
    List<LeasedRateLimiter> processes = new ArrayList<>();
    for (int p = 0; p < 3; p++) {
      // A lease time longer than the window: the window's end must end each block first.
      processes.add(lease(name, limit, 8, Duration.ofSeconds(90)));
    }
    ConcurrentLinkedQueue<Long> log = new ConcurrentLinkedQueue<>();
    Random random = new Random(29);
    for (int step = 0; step < 300; step++) {
      clock.advanceNanos(random.nextInt(2_000) * 1_000_000L);
      LeasedRateLimiter p = processes.get(random.nextInt(3));
      for (int n = random.nextInt(5); n >= 0; n--) {
        long at = clock.nanos();
        if (p.tryAcquire()) {
          log.add(at);
        }
      }
    }
    List<Long> grants = new ArrayList<>(log);
    Collections.sort(grants);
    assertThat(grants.size()).as("the timeline spans several windows").isGreaterThan((int) (2 * limitPerWindow));
    Map<Long, Integer> perWindow = new TreeMap<>();
    for (long t : grants) {
      perWindow.merge(Math.floorDiv(t, windowNanos), 1, Integer::sum);
    }
    perWindow.forEach((w, n) -> assertThat(n).as("grants in window %d", w).isLessThanOrEqualTo((int) limitPerWindow));
    if (limit.kind() == Limit.Kind.SLIDING_WINDOW) {
      // And the weighted estimate at every grant: ceil(previous × (W − elapsed) / W) + current ≤ L.
      int current = 0;
      long window = Long.MIN_VALUE;
      for (long t : grants) {
        long w = Math.floorDiv(t, windowNanos);
        if (w != window) {
          window = w;
          current = 0;
        }
        current++;
        long previous = perWindow.getOrDefault(w - 1, 0);
        long elapsed = t - w * windowNanos;
        long weighted = (previous * (windowNanos - elapsed) + windowNanos - 1) / windowNanos;
        assertThat(weighted + current).as("sliding estimate at %d ns", t).isLessThanOrEqualTo(limitPerWindow);
      }
    }
  }

  /**
   * Waits for a lease's background refill to give it some stock: the refill runs on its own
   * thread, which the manual clock does not drive.
   */
  private static void awaitStock(LeasedRateLimiter lease) {
    long deadline = System.nanoTime() + 10 * SECOND;
    while (lease.stock() == 0) {
      assertThat(System.nanoTime() - deadline).as("a refill landed in %s", lease).isNegative();
      Thread.yield();
    }
  }

  /** Grants from {@code lease} until it denies {@code row} times in a row; how many it granted. */
  private static int drain(LeasedRateLimiter lease, int row) {
    int granted = 0;
    for (int denied = 0, i = 0; denied < row && i < 1_000; i++) {
      if (lease.tryAcquire()) {
        granted++;
        denied = 0;
      } else {
        denied++;
      }
    }
    return granted;
  }

  @Test
  public void stockIsNotGrantedPastItsLeaseTime() {
    assumeKitClock();
    String name = name();
    Limit limit = Limit.tokenBucket(40, Duration.ofSeconds(40)); // one unit a second
    Duration leaseTime = Duration.ofMillis(500); // less than a unit's refill: no slack at all
    LeasedRateLimiter a = lease(name, limit, 8, leaseTime);
    LeasedRateLimiter b = lease(name, limit, 8, leaseTime);
    assertThat(a.tryAcquire()).isTrue();
    awaitStock(a);

    clock.advanceNanos(41 * SECOND); // the bucket is full again; a's stock is long past its lease
    assertThat(a.stock()).isZero();
    int granted = drain(b, 3) + drain(a, 3);
    assertThat(granted).as("grants at one instant of a full bucket: capacity + rate × lease time")
        .isLessThanOrEqualTo(40);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("windows")
  public void stockNeverOutlivesTheWindowItWasGrantedIn(String kind, Limit limit) {
    assumeKitClock();
    String name = name();
    LeasedRateLimiter a = lease(name, limit, 8, Duration.ofMinutes(10));
    LeasedRateLimiter b = lease(name, limit, 8, Duration.ofMinutes(10));
    assertThat(a.tryAcquire()).isTrue();
    awaitStock(a);
    long stale = a.stock();
    int previous = 1 + drain(b, 3);
    assertThat(previous + stale).as("the first window's grants and a's stock").isEqualTo(30);

    clock.advanceNanos(119 * SECOND); // 59 s into the next window
    assertThat(a.stock()).isZero();
    int granted = drain(b, 3) + drain(a, 3);
    long allowed = 30;
    if (limit.kind() == Limit.Kind.SLIDING_WINDOW) {
      allowed -= (previous * SECOND + 60 * SECOND - 1) / (60 * SECOND); // ceil(previous × 1 s / 60 s)
    }
    assertThat(granted).as("grants in the next window").isLessThanOrEqualTo((int) allowed);
  }

  /** The window algorithms, each with a limit of 30 per minute. */
  public static Stream<Arguments> windows() {
    return Stream.of(
        Arguments.of("fixed window", Limit.fixedWindow(30, Duration.ofMinutes(1))),
        Arguments.of("sliding window", Limit.slidingWindow(30, Duration.ofMinutes(1))));
  }
}
