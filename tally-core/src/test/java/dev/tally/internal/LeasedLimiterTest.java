package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyMetrics;
import dev.tally.internal.OutageStoreProvider.Mode;
import dev.tally.internal.OutageStoreProvider.OutageStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Leased mode over a store that can be taken down, on a manual clock: what a lease grants
 * through an outage, when its blocks end, what it returns, and what it reports. The guarantees
 * on every store are the kit's {@code LeaseContract}.
 */
class LeasedLimiterTest {
  private static final Duration LEASE = Duration.ofSeconds(10);

  private final AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final Tally tally = Tally.builder("outage:").timeSource(now::get)
      .listener(TallyMetrics.of(registry, "outage:")).build();
  private final OutageStore store = (OutageStore) ((TallyRuntime) tally).store();

  @AfterEach
  void close() {
    tally.close();
  }

  /** Grants one at a time, letting each refill land, until the stock holds at least {@code atLeast}. */
  private static long warm(LeasedLimiter lease, long atLeast) {
    long granted = 0;
    for (int i = 0; i < 1_000 && lease.stock() < atLeast; i++) {
      assertThat(lease.tryAcquire()).isTrue();
      granted++;
      lease.awaitRefill();
    }
    assertThat(lease.stock()).isGreaterThanOrEqualTo(atLeast);
    return granted;
  }

  @Test
  void grantsFromItsStockThroughAnOutageThenAppliesTheFailurePolicy() {
    RateLimiter plain = tally.limiter("hot", Limit.tokenBucket(1_000, Duration.ofDays(3_650)))
        .withFailurePolicy(FailurePolicy.FAIL_CLOSED);
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, LEASE);
    long granted = warm(lease, 32);
    long stock = lease.stock();

    store.mode = Mode.DOWN;
    int calls = store.calls.get();
    for (long i = 0; i < stock; i++) {
      assertThat(lease.tryAcquire()).as("permit %d of the stock", i).isTrue();
    }
    granted += stock;
    lease.awaitRefill();
    assertThat(lease.stock()).isZero();
    Decision refused = lease.decide(1);
    assertThat(refused.allowed()).isFalse();
    assertThat(refused.storeFailed()).isTrue();
    assertThat(store.calls.get()).as("the store was tried again only once the stock was spent")
        .isGreaterThan(calls);

    store.mode = Mode.UP;
    assertThat(plain.available()).as("the store counted every permit granted, and nothing else")
        .isEqualTo(1_000 - granted);
    lease.close();
  }

  @Test
  void stockPastItsLeaseTimeIsNotGrantedButRefunded() {
    RateLimiter plain = tally.limiter("expiring", Limit.tokenBucket(1_000, Duration.ofDays(3_650)))
        .withFailurePolicy(FailurePolicy.FAIL_CLOSED);
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, LEASE);
    long granted = warm(lease, 16);

    now.addAndGet(LEASE.toNanos() / 2 - 500_000_000L); // a bucket's block is used or returned within d/2
    lease.maintain(); // the tick returns the blocks that end before the next
    assertThat(lease.stock()).isZero();
    assertThat(plain.available()).as("the stock about to end was refunded").isEqualTo(1_000 - granted);
    assertThat(registry.get("tally.lease.permits").tag("event", "expired").tag("refunded", "true")
        .counter().count()).isPositive();

    granted += warm(lease, 8);
    store.mode = Mode.DOWN;
    now.addAndGet(LEASE.toNanos());
    assertThat(lease.tryAcquire()).as("an expired stock grants nothing; the store is down").isFalse();
    store.mode = Mode.UP;
    lease.close();
    // Dropped while the store was down: still counted by the store, which under-admits only.
    assertThat(plain.available()).isLessThan(1_000 - granted);
    assertThat(registry.get("tally.lease.permits").tag("event", "expired").tag("refunded", "false")
        .counter().count()).isPositive();
  }

  @Test
  void unusedStockGoesBackOnCloseAndWhenDemandFalls() {
    RateLimiter plain = tally.limiter("returned", Limit.tokenBucket(1_000, Duration.ofDays(3_650)));
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, LEASE);
    long granted = warm(lease, 16);
    assertThat(registry.get("tally.lease.stock").gauge().value()).isEqualTo((double) lease.stock());

    lease.maintain();
    now.addAndGet(LEASE.toNanos() / 4);
    lease.maintain(); // nothing taken for a quarter of the lease time: the stock goes back
    assertThat(lease.stock()).isZero();
    assertThat(plain.available()).isEqualTo(1_000 - granted);
    assertThat(registry.get("tally.lease.permits").tag("event", "returned").tag("refunded", "true")
        .counter().count()).isPositive();

    granted += warm(lease, 4);
    lease.close();
    assertThat(plain.available()).isEqualTo(1_000 - granted);
    assertThat(registry.get("tally.lease.stock").gauge().value()).isZero();
    assertThat(lease.tryAcquire()).as("a closed lease decides plainly").isTrue();
    assertThat(plain.available()).isEqualTo(1_000 - granted - 1);
  }

  @Test
  void aWindowsBlockEndsWithItsWindowAndIsNotRefundedIntoTheNext() {
    Duration window = Duration.ofMinutes(1);
    now.set(60_000_000_000L * 28_333_333L); // a window start
    RateLimiter plain = tally.limiter("window", Limit.fixedWindow(800, window));
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, Duration.ofMinutes(10));
    warm(lease, 16);

    now.addAndGet(window.toNanos());
    assertThat(lease.stock()).as("the window it was granted in has ended").isZero();
    lease.maintain();
    assertThat(plain.available()).as("nothing refunded into the new window").isEqualTo(800);
    assertThat(registry.get("tally.lease.permits").tag("event", "expired").tag("refunded", "false")
        .counter().count()).isPositive();
    lease.close();
  }

  @Test
  void decisionsReportTheStoresRemainingPlusTheStock() {
    RateLimiter plain = tally.limiter("reported", Limit.tokenBucket(1_000, Duration.ofDays(3_650)));
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, LEASE);
    long granted = warm(lease, 16);
    Decision d = lease.decide(1);
    granted++;
    lease.awaitRefill();
    assertThat(d.allowed()).isTrue();
    assertThat(d.limit()).isEqualTo(1_000);
    assertThat(lease.available()).isEqualTo(1_000 - granted);
    lease.close();
  }

  @Test
  void aWeightedRequestIsGrantedFromOneBlockOrByTheStore() {
    RateLimiter plain = tally.limiter("weighted", Limit.tokenBucket(1_000, Duration.ofDays(3_650)));
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, LEASE);
    assertThat(lease.tryAcquire(5)).as("a first block large enough for the request").isTrue();
    assertThat(lease.tryAcquire(500)).as("more than a block: the store decides it").isTrue();
    lease.awaitRefill();
    lease.close();
    assertThat(plain.available()).isEqualTo(1_000 - 505);
  }

  /**
   * Every permit the store leased is granted, returned or expired, and reported once, over a
   * random timeline where blocks end between calls (so a refill can land while an ended block
   * still holds permits).
   */
  @Test
  void everyLeasedPermitIsGrantedReturnedOrExpiredAndReportedOnce() {
    RateLimiter plain = tally.limiter("book", Limit.tokenBucket(400, Duration.ofSeconds(40)));
    LeasedLimiter lease = (LeasedLimiter) plain.leased(64, LEASE);
    java.util.Random random = new java.util.Random(28);
    long granted = 0;
    for (int i = 0; i < 3_000; i++) {
      now.addAndGet(random.nextInt(4) == 0 ? 0 : random.nextInt(2_000) * 1_000_000L);
      for (int n = random.nextInt(7); n > 0; n--) {
        granted += lease.tryAcquire() ? 1 : 0;
      }
      lease.awaitRefill();
    }
    lease.close();
    assertThat(permits("leased")).as("leased = granted + returned + expired")
        .isEqualTo(granted + permits("returned") + permits("expired"));
  }

  private long permits(String event) {
    double sum = 0;
    for (io.micrometer.core.instrument.Counter c : registry.find("tally.lease.permits").tag("event", event).counters()) {
      sum += c.count();
    }
    return (long) sum;
  }

  @Test
  void badSettingsAreRefusedClearly() {
    RateLimiter plain = tally.limiter("bad", Limit.tokenBucket(10, Duration.ofSeconds(1)));
    assertThatThrownBy(() -> plain.leased(0, LEASE)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxBlock must be 1 or more");
    assertThatThrownBy(() -> plain.leased(10, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leaseTime must be positive");
    try (LeasedRateLimiter lease = plain.leased(1_000, LEASE)) {
      assertThat(lease.maxBlock()).isEqualTo(1_000);
      assertThatThrownBy(() -> lease.tryAcquire(-1)).isInstanceOf(IllegalArgumentException.class);
    }
  }
}
