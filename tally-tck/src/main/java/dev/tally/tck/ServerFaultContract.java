package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The server frozen under load: what a hung host, a long stall or a network partition does to
 * a client whose sockets stay open and hear nothing. Threads increment one counter and decide on
 * one limiter while the harness freezes the server ({@link ServerFreeze}) for longer than the
 * call timeout, then resumes it. The store passes if
 *
 * <ul>
 *   <li>every call ends within its timeout and {@link #SLACK}, answered or failed with a
 *       {@link StoreException}: none hangs;
 *   <li>every thread succeeds again within {@link #RECOVERY} of the resume;
 *   <li>nothing acknowledged is lost and nothing counted twice: the counter ends between the
 *       acknowledged increments and those plus the calls whose outcome is unknown (failed, so
 *       "may or may not have applied"), and the limiter never granted more than its capacity
 *       and remembers every grant it acknowledged.
 * </ul>
 *
 * Time here is the wall clock's by necessity: a timeout is a bound on real waiting. The kit's
 * manual clock still drives the limiter, frozen, so the bucket never refills and every grant
 * shows in what is left.
 */
public abstract class ServerFaultContract extends TallyFixture {
  /** How far past its timeout a call may end: the time to fail it and hand the failure back. */
  public static final Duration SLACK = Duration.ofSeconds(1);
  /** How soon after the server resumes every thread's calls succeed again. */
  public static final Duration RECOVERY = Duration.ofSeconds(5);

  private static final int INCREMENTERS = 4;
  private static final int DECIDERS = 4;
  private static final int CAPACITY = 2_000;

  @Test
  public void everyCallEndsWithinItsTimeoutAndNothingAcknowledgedIsLost() throws Exception {
    StoreConfiguration.Freezing freezing = configuration() == null ? null : configuration().freezing();
    assumeTrue(freezing != null, "no server to freeze in this configuration");
    long bound = freezing.callTimeout().plus(SLACK).toNanos();
    RateLimiter limiter = tally.limiter(group("frozen"), Limit.tokenBucket(CAPACITY, Duration.ofHours(1)));
    counters.incr("frozen", 0); // the counter exists before the freeze

    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong resumedAt = new AtomicLong(Long.MAX_VALUE);
    List<Worker> workers = new ArrayList<>();
    for (int i = 0; i < INCREMENTERS + DECIDERS; i++) {
      boolean decides = i >= INCREMENTERS;
      workers.add(new Worker(decides ? "decider-" + i : "incrementer-" + i, stop, resumedAt, bound, () -> {
        if (decides) {
          Decision d = limiter.decide(1);
          return d.allowed() ? 1 : 0;
        }
        counters.incr("frozen");
        return 1;
      }));
    }
    workers.forEach(Thread::start);
    try {
      Thread.sleep(300); // calls flowing before the freeze
      freezing.server().freeze();
      try {
        Thread.sleep(freezing.freezeFor().toMillis());
      } finally {
        freezing.server().resume();
        resumedAt.set(System.nanoTime());
      }
      long recoveryDeadline = System.nanoTime() + RECOVERY.toNanos();
      while (System.nanoTime() < recoveryDeadline && !workers.stream().allMatch(Worker::succeededSinceResume)) {
        Thread.sleep(20);
      }
      Thread.sleep(200); // a little load after the recovery too
    } finally {
      stop.set(true);
      for (Worker w : workers) {
        w.join(TimeUnit.NANOSECONDS.toMillis(bound) + 1_000);
      }
    }

    for (Worker w : workers) {
      assertThat(w.isAlive()).as("%s hangs", w.getName()).isFalse();
      assertThat(w.unexpected).as("%s failed with something other than a store failure", w.getName()).isNull();
      assertThat(Duration.ofNanos(w.longestNanos))
          .as("%s: the longest call (timeout %s, %s)", w.getName(), freezing.callTimeout(), w)
          .isLessThanOrEqualTo(Duration.ofNanos(bound));
      assertThat(w.succeededSinceResume())
          .as("%s succeeds again within %s of the resume (%s)", w.getName(), RECOVERY, w).isTrue();
    }
    long acknowledged = workers.subList(0, INCREMENTERS).stream().mapToLong(w -> w.acknowledged).sum();
    long unknown = workers.subList(0, INCREMENTERS).stream().mapToLong(w -> w.failed).sum();
    assertThat(acknowledged).as("increments acknowledged").isPositive();
    assertThat(workers.stream().mapToLong(w -> w.failed).sum()).as("calls failed by the freeze").isPositive();
    long value = counters.get("frozen").orElseThrow();
    assertThat(value).as("the counter: %d acknowledged, %d unknown", acknowledged, unknown)
        .isBetween(acknowledged, acknowledged + unknown);

    long granted = workers.subList(INCREMENTERS, workers.size()).stream().mapToLong(w -> w.acknowledged).sum();
    long grantsUnknown = workers.subList(INCREMENTERS, workers.size()).stream().mapToLong(w -> w.failed).sum();
    long left = limiter.available();
    assertThat(granted).as("grants acknowledged, of %d", CAPACITY).isBetween(1L, (long) CAPACITY);
    assertThat(CAPACITY - left).as("permits taken: %d granted, %d unknown", granted, grantsUnknown)
        .isBetween(granted, Math.min(CAPACITY, granted + grantsUnknown));
  }

  /** One thread's calls: what it counted, what failed, and its longest wait. */
  private static final class Worker extends Thread {
    interface Call {
      /** Makes one call; returns what it acknowledged (increments, or permits granted). */
      long run();
    }

    private final AtomicBoolean stop;
    private final AtomicLong resumedAt;
    private final long bound;
    private final Call call;
    // written by this thread alone, read after join(), which orders them
    long acknowledged;
    long failed;
    long longestNanos;
    /** Read while the thread runs, to see recovery. */
    volatile long lastSuccessAt = Long.MIN_VALUE;
    volatile Throwable unexpected;

    Worker(String name, AtomicBoolean stop, AtomicLong resumedAt, long bound, Call call) {
      super(name);
      setDaemon(true);
      this.stop = stop;
      this.resumedAt = resumedAt;
      this.bound = bound;
      this.call = call;
    }

    boolean succeededSinceResume() {
      return lastSuccessAt >= resumedAt.get();
    }

    @Override
    public void run() {
      while (!stop.get()) {
        long started = System.nanoTime();
        try {
          acknowledged += call.run();
          lastSuccessAt = System.nanoTime();
        } catch (StoreException e) {
          failed++;
        } catch (Throwable t) {
          unexpected = t;
          return;
        } finally {
          long took = System.nanoTime() - started;
          longestNanos = Math.max(longestNanos, took);
        }
        if (failed > 0 && lastSuccessAt < started) {
          // failing fast while the server is away: pace the retries as a client would
          try {
            Thread.sleep(10);
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }

    @Override
    public String toString() {
      return acknowledged + " acknowledged, " + failed + " failed, longest call "
          + TimeUnit.NANOSECONDS.toMillis(longestNanos) + " ms of at most " + TimeUnit.NANOSECONDS.toMillis(bound);
    }
  }
}
