package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.tck.FaultWorkload;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A Sentinel group of a primary, two replicas and three Sentinels, its primary killed
 * ({@code SIGKILL}) or frozen ({@code SIGSTOP}) past the promotion of a replica and then resumed,
 * while threads increment a counter and take permits from a limiter.
 *
 * <p>With {@code replicas=1} nothing acknowledged may be lost and no permit granted twice: every
 * acknowledged write reached a replica, and the Sentinels promote the replica that has the most.
 * Without it, what asynchronous replication loses is measured and printed (docs/redis.md gives
 * the figures), and everything else is checked the same: every call ends within its timeout and
 * the slack, and calls succeed on the promoted replica within {@value #BACK_WITHIN_MILLIS} ms of
 * its promotion, while the frozen primary is still frozen.
 */
class SentinelFaultTest {
  private static final long TIMEOUT_MILLIS = 1000;
  private static final long SLACK_MILLIS = 1000;
  private static final long BACK_WITHIN_MILLIS = 2000;
  /** Permits of a limiter that adds none back in the test's time. */
  private static final int CAPACITY = 20_000;

  private SentinelGroup group;
  private Tally tally;

  @BeforeEach
  void start() {
    group = SentinelGroup.start(2, 3, 1000);
  }

  @AfterEach
  void stop() {
    if (tally != null) {
      tally.close();
    }
    if (group != null) {
      group.close();
    }
  }

  @ParameterizedTest(name = "{0}, replicas={1}")
  @CsvSource({"kill, 1", "freeze, 1", "kill, 0", "freeze, 0"})
  void nothingAcknowledgedIsLostThroughAFailover(String fault, int replicas) throws Exception {
    tally = Tally.open(group.uri("&timeout=" + TIMEOUT_MILLIS + "ms&replicas=" + replicas));
    Counters counters = tally.counters("fault");
    RateLimiter limiter = tally.limiter("fault-limiter", Limit.tokenBucket(CAPACITY, Duration.ofDays(365)));
    counters.incr("n", 0);
    RedisServer primary = group.server(group.primaryPort());

    FaultWorkload load = FaultWorkload.start(counters, "n", 4, limiter, 4);
    long promotedAt;
    long backAt;
    try {
      Thread.sleep(1000);
      long faultAt = System.nanoTime();
      if (fault.equals("kill")) {
        primary.kill();
      } else {
        primary.pause();
      }
      try {
        promotedAt = awaitPromotion(primary.port());
        // every thread succeeds on the promoted replica, the old primary still frozen or dead
        backAt = load.awaitEveryThreadSucceededAt(promotedAt, Duration.ofMillis(BACK_WITHIN_MILLIS + 3000));
        System.out.printf("%s, replicas=%d: promoted %d ms after the fault, calls back %d ms after the promotion%n",
            fault, replicas, TimeUnit.NANOSECONDS.toMillis(promotedAt - faultAt),
            backAt == Long.MAX_VALUE ? -1 : TimeUnit.NANOSECONDS.toMillis(backAt - promotedAt));
        Thread.sleep(1000);
      } finally {
        primary.resume(); // the frozen primary wakes up still taking itself for the primary
      }
      Thread.sleep(3000); // the window in which a client could write to it until it is demoted
    } finally {
      List<String> hanging = load.stop(TIMEOUT_MILLIS + SLACK_MILLIS + 1000);
      assertThat(hanging).as("threads whose call hangs").isEmpty();
    }

    load.assertEveryCallEndedWithin(Duration.ofMillis(TIMEOUT_MILLIS + SLACK_MILLIS));
    assertThat(backAt).as("every thread succeeds within %d ms of the promotion", BACK_WITHIN_MILLIS)
        .isLessThanOrEqualTo(promotedAt + TimeUnit.MILLISECONDS.toNanos(BACK_WITHIN_MILLIS));

    long value = counters.get("n").orElseThrow();
    long taken = CAPACITY - limiter.available();
    long lost = Math.max(0, load.acknowledged() - value);
    long forgotten = Math.max(0, load.granted() - taken);
    System.out.printf("%s, replicas=%d: %s; counter %d: %d acknowledged increments lost; %d permits taken:"
        + " %d grants forgotten%n", fault, replicas, load, value, lost, taken, forgotten);
    if (replicas > 0) {
      assertThat(load.granted()).as("permits granted").isLessThanOrEqualTo(CAPACITY);
      load.assertNothingAcknowledgedLost(value, taken, CAPACITY);
    }
  }

  /** Waits until the Sentinels name another primary than {@code port}; returns when they did. */
  private long awaitPromotion(int port) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      if (group.primaryPort() != port) {
        return System.nanoTime();
      }
      Thread.sleep(10);
    }
    throw new AssertionError("no replica promoted within 30 s:\n" + group.sentinel.logTail());
  }
}
