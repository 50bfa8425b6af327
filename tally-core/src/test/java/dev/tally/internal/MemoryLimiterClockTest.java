package dev.tally.internal;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TimeSource;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The memory store reads the clock before it takes a limiter's state, so a thread descheduled in
 * between decides at an instant older than the state may already be at. With a clock that only
 * moves forward, that is the same as a clock stepping back (which the conformance kit checks on
 * every store), and it must not roll a window back.
 */
class MemoryLimiterClockTest {
  private static final long BOUNDARY = 1_800_000_000_000_000_000L; // a multiple of 10 s

  @Test
  void aCallerDescheduledAfterReadingTheClockDoesNotRollTheWindowBack() throws Exception {
    AtomicLong clock = new AtomicLong(BOUNDARY - 1_000);
    CountDownLatch stalledHasReadTheClock = new CountDownLatch(1);
    CountDownLatch resumeStalled = new CountDownLatch(1);
    AtomicBoolean stallNextRead = new AtomicBoolean();
    TimeSource time = () -> {
      long t = clock.get();
      if (Thread.currentThread().getName().equals("stalled") && stallNextRead.getAndSet(false)) {
        stalledHasReadTheClock.countDown();
        try {
          resumeStalled.await(); // descheduled right after reading the clock
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return t;
    };
    try (Tally tally = Tally.builder("mem:").timeSource(time).build()) {
      RateLimiter limiter = tally.limiter("fw", Limit.fixedWindow(3, Duration.ofSeconds(10)));
      assertThat(limiter.tryAcquire()).isTrue(); // the old window has state
      AtomicInteger granted = new AtomicInteger();
      stallNextRead.set(true);
      Thread stalled = new Thread(() -> {
        if (limiter.tryAcquire()) {
          granted.incrementAndGet(); // it returns after the boundary: a grant of the new window
        }
      }, "stalled");
      stalled.start();
      stalledHasReadTheClock.await();
      clock.set(BOUNDARY + 1_000);
      for (int i = 0; i < 5; i++) {
        granted.addAndGet(limiter.tryAcquire() ? 1 : 0);
      }
      resumeStalled.countDown();
      stalled.join();
      clock.set(BOUNDARY + 2_000);
      for (int i = 0; i < 5; i++) {
        granted.addAndGet(limiter.tryAcquire() ? 1 : 0);
      }
      assertThat(granted.get()).as("grants in the window that began at the boundary").isEqualTo(3);
    }
  }
}
