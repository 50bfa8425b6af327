package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SystemTimeSourceTest {
  /** Generous, so a preempted test thread on a busy machine does not fail it. */
  private static final long SLACK = TimeUnit.MILLISECONDS.toNanos(5);

  private static long instantNanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  @Test
  void readsTheWallClockInEpochNanoseconds() {
    TimeSource clock = TimeSource.system();
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50); // many re-measurements
    int reads = 0;
    while (System.nanoTime() - end < 0) {
      long before = instantNanos();
      long t = clock.nanos();
      long after = instantNanos();
      assertThat(t).isBetween(before - SLACK, after + SLACK);
      reads++;
    }
    assertThat(reads).isPositive();
  }

  @Test
  void advancesAtTheRateOfTheWallClock() throws InterruptedException {
    TimeSource clock = TimeSource.system();
    long t0 = clock.nanos();
    long w0 = instantNanos();
    Thread.sleep(20);
    long t1 = clock.nanos();
    long w1 = instantNanos();
    assertThat(t1 - t0).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(20) - SLACK);
    assertThat((t1 - t0) - (w1 - w0)).isBetween(-SLACK, SLACK);
  }
}
