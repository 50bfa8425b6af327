package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.Internals;
import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.tck.Concurrently;
import dev.tally.tck.ManualTimeSource;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The hot-key guard ({@code ?denyCache=true}): repeated denials are answered locally until the
 * retry-after, counted and reported to the listener, never admitting anything Redis would not,
 * and forgotten when this process refunds, resets, reconfigures or tops up. Calls that reach
 * Redis are counted on this class's own server with {@code INFO commandstats}.
 */
class DenyCacheTest {
  private static RedisServer server;
  private final AtomicLong reported = new AtomicLong();
  private ManualTimeSource clock;
  private Tally tally;
  private DenyCache cache;

  @BeforeAll
  static void start() {
    server = RedisServer.start();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  @BeforeEach
  void open() {
    clock = new ManualTimeSource();
    tally = Tally.builder(server.uri() + "?denyCache=true").timeSource(clock)
        .listener(new TallyListener() {
          @Override
          public void onLocalDenial(String key) {
            reported.incrementAndGet();
          }
        }).build();
    cache = ((RedisStore) Internals.storeOf(tally)).denyCache();
  }

  @AfterEach
  void close() {
    tally.close();
  }

  private long scriptRuns(Runnable r) {
    server.call("CONFIG", "RESETSTAT");
    r.run();
    String stats = server.info("commandstats").getOrDefault("cmdstat_evalsha", "calls=0,");
    return Long.parseLong(stats.substring("calls=".length(), stats.indexOf(',')));
  }

  private static String name() {
    return "guard-" + UUID.randomUUID();
  }

  @Test
  void aFloodOfDenialsCostsOneScriptRun() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(5, Duration.ofHours(1)));
    assertThat(l.tryAcquire(5)).isTrue();
    Decision first = l.decide(1);
    assertThat(first.allowed()).isFalse();
    long runs = scriptRuns(() -> {
      for (int i = 0; i < 1000; i++) {
        assertThat(l.tryAcquire()).isFalse();
      }
    });
    assertThat(runs).isZero();
    assertThat(cache.hits()).isEqualTo(1000);
    assertThat(reported).hasValue(1000);

    clock.advance(Duration.ofMinutes(1));
    Decision cached = l.decide(1);
    assertThat(cached.allowed()).isFalse();
    assertThat(cached.retryAfterNanos()).isEqualTo(first.retryAfterNanos() - Duration.ofMinutes(1).toNanos());
    assertThat(cached.resetAfterNanos()).isEqualTo(first.resetAfterNanos() - Duration.ofMinutes(1).toNanos());
    assertThat(cached.limit()).isEqualTo(5);

    clock.advanceNanos(cached.retryAfterNanos());
    assertThat(scriptRuns(() -> assertThat(l.tryAcquire()).as("at retry-after Redis decides").isTrue())).isEqualTo(1);
  }

  /** A cached denial of several limits keeps each one's state, its reset counting down. */
  @Test
  void aCachedDenialOfSeveralLimitsKeepsEachLimitsState() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(5, Duration.ofMinutes(1)),
        Limit.fixedWindow(100, Duration.ofHours(1)));
    assertThat(l.tryAcquire(5)).isTrue();
    Decision first = l.decide(1);
    assertThat(first.allowed()).isFalse();
    assertThat(first.limits()).hasSize(2);
    clock.advance(Duration.ofSeconds(3));
    Decision[] cached = new Decision[1];
    assertThat(scriptRuns(() -> cached[0] = l.decide(1))).isZero();
    long three = Duration.ofSeconds(3).toNanos();
    assertThat(cached[0].limits()).containsExactly(
        new Decision.LimitState(0, first.limits().get(0).remaining(), 5,
            first.limits().get(0).resetAfterNanos() - three),
        new Decision.LimitState(1, 95, 100, first.limits().get(1).resetAfterNanos() - three));
    assertThat(cached[0].resetAfterNanos()).isEqualTo(first.resetAfterNanos() - three);
  }

  @Test
  void onlyRequestsAtLeastAsLargeAsTheDeniedOneAreAnsweredLocally() {
    RateLimiter l = tally.limiter(name(), Limit.fixedWindow(10, Duration.ofHours(1)));
    assertThat(l.tryAcquire(8)).isTrue();
    assertThat(l.tryAcquire(3)).isFalse();
    assertThat(scriptRuns(() -> assertThat(l.tryAcquire(5)).isFalse())).isZero();
    assertThat(scriptRuns(() -> assertThat(l.tryAcquire(2)).isTrue())).isEqualTo(1);
    assertThat(scriptRuns(() -> assertThat(l.decide(0).allowed()).isTrue())).isEqualTo(1);
    assertThat(scriptRuns(() -> assertThat(l.available()).isZero())).as("available always asks").isEqualTo(1);
  }

  @Test
  void refundResetReconfigureAndTopUpFromThisProcessClearTheEntry() {
    String name = name();
    RateLimiter l = tally.limiter(name, Limit.tokenBucket(2, Duration.ofHours(1)));
    assertThat(l.tryAcquire(2)).isTrue();
    assertThat(l.tryAcquire()).isFalse();
    l.refund(1);
    assertThat(scriptRuns(() -> assertThat(l.tryAcquire()).isTrue())).isEqualTo(1);

    assertThat(l.tryAcquire()).isFalse();
    l.reset();
    assertThat(l.tryAcquire(2)).isTrue();

    assertThat(l.tryAcquire()).isFalse();
    RateLimiter bigger = l.reconfigure(Limit.tokenBucket(4, Duration.ofHours(1)));
    assertThat(bigger.tryAcquire(2)).isTrue();

    Quota q = tally.quota(name(), 1, Limit.Period.MONTH, ZoneOffset.UTC);
    assertThat(q.tryAcquire()).isTrue();
    assertThat(q.tryAcquire()).isFalse();
    q.topUp(1);
    assertThat(q.tryAcquire()).isTrue();
  }

  @Test
  void neverDenialsAreNotCached() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(2, Duration.ofHours(1)));
    assertThat(l.decide(3).retryAfterNanos()).isEqualTo(Decision.NEVER);
    assertThat(cache.size()).isZero();
  }

  @Test
  void itIsOffUnlessAskedFor() {
    try (Tally plain = Tally.builder(server.uri()).timeSource(clock).build()) {
      assertThat(((RedisStore) Internals.storeOf(plain)).denyCache()).isNull();
      RateLimiter l = plain.limiter(name(), Limit.tokenBucket(1, Duration.ofHours(1)));
      l.tryAcquire();
      assertThat(scriptRuns(() -> {
        for (int i = 0; i < 10; i++) {
          l.tryAcquire();
        }
      })).isEqualTo(10);
    }
  }

  @Test
  void underConcurrencyOnTheServerClockItNeverAdmitsMore() {
    try (Tally a = Tally.open(server.uri() + "?denyCache=true"); Tally b = Tally.open(server.uri() + "?denyCache=true")) {
      String name = name();
      long interval = 2_000_000; // 500 per second
      Limit limit = Limit.tokenBucket(100, 500, Duration.ofSeconds(1));
      AtomicLong granted = new AtomicLong();
      long start = System.nanoTime();
      Concurrently.run(32, 400, (t, i) -> {
        if ((t % 2 == 0 ? a : b).limiter(name, limit).tryAcquire()) {
          granted.incrementAndGet();
        }
      });
      long elapsed = System.nanoTime() - start;
      long local = ((RedisStore) Internals.storeOf(a)).denyCache().hits()
          + ((RedisStore) Internals.storeOf(b)).denyCache().hits();
      assertThat(granted.get()).as("granted in %d ms, %d answered locally", elapsed / 1_000_000, local)
          .isLessThanOrEqualTo(100 + elapsed / interval).isGreaterThanOrEqualTo(100);
      assertThat(local).isPositive();
    }
  }
}
