package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The issue's own case: PostgreSQL frozen ({@code SIGSTOP}) for 10 s under a store with
 * {@code timeout=2s}, while threads increment and decide (the limiter calls batched, the
 * default). Before, every call whose statement was out waited out the whole freeze; now each
 * ends within its timeout and a second, and the calls succeed again once the server resumes.
 * The kit's server-fault case runs a shorter freeze on every configuration; this one is long
 * enough that a call bounded only by the freeze's end would show.
 */
class PostgresFreezeTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(2);
  private static final Duration FREEZE = Duration.ofSeconds(10);
  private static final Duration BOUND = TIMEOUT.plusSeconds(1);

  @Test
  void aTenSecondFreezeEndsEveryCallWithinItsTimeoutAndASecond() throws Exception {
    PostgresServer server = PostgresServer.shared();
    String prefix = "freeze:" + Long.toHexString(System.nanoTime()) + ":";
    try (Tally tally = Tally.open(server.uri("timeout=" + TIMEOUT.toSeconds() + "s"))) {
      RateLimiter limiter = tally.limiter(prefix + "limiter", Limit.tokenBucket(1_000_000, Duration.ofSeconds(1)));
      tally.counters().incr(prefix + "counter", 0);
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong resumedAt = new AtomicLong(Long.MAX_VALUE);
      List<Caller> callers = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        boolean decides = i % 2 == 1;
        callers.add(new Caller((decides ? "decide-" : "incr-") + i, stop, resumedAt, decides
            ? () -> limiter.decide(1)
            : () -> tally.counters().incr(prefix + "counter")));
      }
      callers.forEach(Thread::start);
      try {
        Thread.sleep(500);
        server.freeze();
        try {
          Thread.sleep(FREEZE.toMillis());
        } finally {
          server.resume();
          resumedAt.set(System.nanoTime());
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < until && !callers.stream().allMatch(Caller::succeededSinceResume)) {
          Thread.sleep(20);
        }
      } finally {
        stop.set(true);
        for (Caller c : callers) {
          c.join(BOUND.toMillis() + 1_000);
        }
      }
      for (Caller c : callers) {
        System.out.println("PostgresFreezeTest " + c.getName() + ": " + c);
        assertThat(c.isAlive()).as("%s hangs", c.getName()).isFalse();
        assertThat(c.unexpected).as("%s: not a store failure", c.getName()).isNull();
        assertThat(c.longestMillis).as("%s: the longest call (%s)", c.getName(), c).isLessThanOrEqualTo(BOUND.toMillis());
        assertThat(c.succeededSinceResume()).as("%s succeeds again after the resume (%s)", c.getName(), c).isTrue();
      }
      assertThat(callers.stream().mapToLong(c -> c.timedOut + c.unavailable).sum()).as("calls failed by the freeze")
          .isPositive();
    }
  }

  /** One thread's calls, each timed. */
  private static final class Caller extends Thread {
    private final AtomicBoolean stop;
    private final AtomicLong resumedAt;
    private final Runnable call;
    // written by this thread alone, read after join()
    long answered;
    long timedOut;
    long unavailable;
    long longestMillis;
    volatile long lastSuccessAt = Long.MIN_VALUE;
    volatile Throwable unexpected;

    Caller(String name, AtomicBoolean stop, AtomicLong resumedAt, Runnable call) {
      super(name);
      setDaemon(true);
      this.stop = stop;
      this.resumedAt = resumedAt;
      this.call = call;
    }

    boolean succeededSinceResume() {
      return lastSuccessAt >= resumedAt.get();
    }

    @Override
    public void run() {
      while (!stop.get()) {
        long started = System.nanoTime();
        boolean failed = false;
        try {
          call.run();
          answered++;
          lastSuccessAt = System.nanoTime();
        } catch (StoreTimeoutException e) {
          timedOut++;
          failed = true;
        } catch (StoreUnavailableException e) {
          unavailable++;
          failed = true;
        } catch (RuntimeException e) { // another StoreException than these two, or worse
          unexpected = e;
          return;
        } finally {
          longestMillis = Math.max(longestMillis, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        }
        if (failed) {
          try {
            Thread.sleep(10); // a client's pause between retries while the server is away
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }

    @Override
    public String toString() {
      return answered + " answered, " + timedOut + " timed out, " + unavailable + " unavailable, longest call "
          + longestMillis + " ms";
    }
  }
}
