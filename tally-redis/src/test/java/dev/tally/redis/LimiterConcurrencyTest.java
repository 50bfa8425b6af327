package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.tck.Concurrently;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * 32 threads over four independent stores (four connections, as four processes would have) on
 * one limiter key, deciding on the server's clock: the number granted never exceeds what the
 * limit allows over the time the run took ({@code capacity + elapsed / interval} for a bucket),
 * and with a refill too slow to matter it is exactly the capacity.
 */
class LimiterConcurrencyTest {
  private static final int THREADS = 32;
  private static final int STORES = 4;
  private final List<Tally> stores = new ArrayList<>();

  @BeforeEach
  void open() {
    for (int i = 0; i < STORES; i++) {
      stores.add(Tally.open(SharedServers.standalone().uri()));
    }
  }

  @AfterEach
  void close() {
    stores.forEach(Tally::close);
  }

  private long run(String name, Limit limit, int perThread, long[] elapsed) {
    AtomicLong granted = new AtomicLong();
    long start = System.nanoTime();
    Concurrently.run(THREADS, perThread, (t, i) -> {
      RateLimiter l = stores.get(t % STORES).limiter(name, limit);
      if (l.tryAcquire()) {
        granted.incrementAndGet();
      }
    });
    elapsed[0] = System.nanoTime() - start;
    return granted.get();
  }

  @Test
  void aBucketWithoutRefillGrantsExactlyItsCapacity() {
    long[] elapsed = new long[1];
    long granted = run("conc-" + UUID.randomUUID(), Limit.tokenBucket(500, Duration.ofDays(1)), 60, elapsed);
    // 1920 requests against 500 tokens; a day's refill adds one token per 173 s
    assertThat(granted).isEqualTo(500);
  }

  @Test
  void aRefillingBucketNeverGrantsMoreThanCapacityPlusRefill() {
    long interval = 1_000_000; // one token per millisecond
    Limit limit = Limit.tokenBucket(50, 1000, Duration.ofSeconds(1));
    long[] elapsed = new long[1];
    long granted = run("conc-" + UUID.randomUUID(), limit, 150, elapsed);
    long allowed = 50 + elapsed[0] / interval;
    assertThat(granted).as("granted in %d ms", elapsed[0] / 1_000_000).isLessThanOrEqualTo(allowed).isGreaterThan(50);
  }

  @Test
  void gcraAndWindowsHoldTheirBoundsToo() {
    long[] elapsed = new long[1];
    assertThat(run("conc-" + UUID.randomUUID(), Limit.gcra(99, 1, Duration.ofHours(1)), 20, elapsed)).isEqualTo(100);
    assertThat(run("conc-" + UUID.randomUUID(), Limit.slidingWindow(300, Duration.ofDays(1)), 20, elapsed))
        // exactly 300 unless the run straddles midnight UTC, which lets through at most one more
        .isLessThanOrEqualTo(301).isGreaterThanOrEqualTo(150);
    assertThat(run("conc-" + UUID.randomUUID(), Limit.quota(250, Limit.Period.MONTH, java.time.ZoneOffset.UTC),
        20, elapsed)).isEqualTo(250);
  }
}
