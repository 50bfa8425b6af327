package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Threads that increment one counter and decide on one limiter until stopped, keeping the books
 * a fault test checks: what was acknowledged, how many calls failed (their outcome unknown: a
 * failed call may or may not have applied), the longest call, and when each thread last
 * succeeded. Fault tests start one, break the store's server under it, and check the books
 * against the store afterwards.
 */
public final class FaultWorkload {
  private final List<Worker> incrementers = new ArrayList<>();
  private final List<Worker> deciders = new ArrayList<>();
  private volatile boolean stop;

  /**
   * Starts {@code incrementing} threads calling {@code counters.incr(key)} and {@code deciding}
   * threads calling {@code limiter.decide(1)}.
   */
  public static FaultWorkload start(Counters counters, String key, int incrementing, RateLimiter limiter,
      int deciding) {
    FaultWorkload w = new FaultWorkload();
    for (int i = 0; i < incrementing; i++) {
      w.incrementers.add(w.new Worker("incrementer-" + i, () -> {
        counters.incr(key);
        return 1;
      }));
    }
    for (int i = 0; i < deciding; i++) {
      w.deciders.add(w.new Worker("decider-" + i, () -> {
        Decision d = limiter.decide(1);
        return d.allowed() ? 1 : 0;
      }));
    }
    w.all().forEach(Thread::start);
    return w;
  }

  private List<Worker> all() {
    List<Worker> all = new ArrayList<>(incrementers);
    all.addAll(deciders);
    return all;
  }

  /** Whether every thread has had a call succeed at or after {@code nanoTime} ({@link System#nanoTime()}). */
  public boolean allSucceededSince(long nanoTime) {
    return all().stream().allMatch(w -> w.lastSuccessAt >= nanoTime);
  }

  /**
   * The latest, over the threads, of each one's first success at or after {@code nanoTime}
   * ({@link System#nanoTime()}), or {@code Long.MAX_VALUE} if one has none yet.
   */
  public long everyThreadSucceededAt(long nanoTime) {
    long latest = Long.MIN_VALUE;
    for (Worker w : all()) {
      long first = w.firstSuccessSince(nanoTime);
      latest = Math.max(latest, first);
    }
    return latest;
  }

  /**
   * Waits up to {@code within} for every thread to succeed at or after {@code nanoTime}; returns
   * {@link #everyThreadSucceededAt} then ({@code Long.MAX_VALUE} if one has not).
   */
  public long awaitEveryThreadSucceededAt(long nanoTime, Duration within) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (everyThreadSucceededAt(nanoTime) == Long.MAX_VALUE && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    return everyThreadSucceededAt(nanoTime);
  }

  /**
   * Stops the threads and waits up to {@code millis} for each; returns the names of those still
   * running: a call that hangs.
   */
  public List<String> stop(long millis) throws InterruptedException {
    stop = true;
    List<String> hanging = new ArrayList<>();
    for (Worker w : all()) {
      w.join(millis);
      if (w.isAlive()) {
        hanging.add(w.getName());
      }
    }
    return hanging;
  }

  /**
   * Checks, after {@link #stop}, that every call ended within {@code bound} and failed, if at
   * all, with a store failure.
   */
  public void assertEveryCallEndedWithin(Duration bound) {
    assertThat(unexpected()).as("a failure other than a store failure").isNull();
    assertThat(Duration.ofNanos(longestCallNanos()))
        .as("the longest call (%s)", this).isLessThanOrEqualTo(bound);
  }

  /**
   * Checks, after {@link #stop}, that the store kept the books: the counter holds every
   * acknowledged increment and at most the failed ones besides, and the limiter of
   * {@code capacity} (adding nothing back meanwhile) has every granted permit taken and at most
   * the failed decisions' besides.
   *
   * @param counter the counter's value now
   * @param taken the limiter's capacity less what it has available now
   */
  public void assertNothingAcknowledgedLost(long counter, long taken, long capacity) {
    assertThat(counter).as("the counter (%s)", this)
        .isBetween(acknowledged(), acknowledged() + incrementsUnknown());
    assertThat(taken).as("permits taken (%s)", this)
        .isBetween(granted(), Math.min(capacity, granted() + decisionsUnknown()));
  }

  /** Increments acknowledged. Read after {@link #stop}. */
  public long acknowledged() {
    return incrementers.stream().mapToLong(w -> w.acknowledged).sum();
  }

  /** Increments that failed: each may or may not have applied. Read after {@link #stop}. */
  public long incrementsUnknown() {
    return incrementers.stream().mapToLong(w -> w.failed).sum();
  }

  /** Permits granted. Read after {@link #stop}. */
  public long granted() {
    return deciders.stream().mapToLong(w -> w.acknowledged).sum();
  }

  /** Decisions that failed: each may or may not have taken a permit. Read after {@link #stop}. */
  public long decisionsUnknown() {
    return deciders.stream().mapToLong(w -> w.failed).sum();
  }

  /** The longest call of any thread, in nanoseconds. Read after {@link #stop}. */
  public long longestCallNanos() {
    return all().stream().mapToLong(w -> w.longestNanos).max().orElse(0);
  }

  /** A failure other than a {@link StoreException}, or null. Read after {@link #stop}. */
  public Throwable unexpected() {
    return all().stream().map(w -> w.unexpected).filter(t -> t != null).findFirst().orElse(null);
  }

  @Override
  public String toString() {
    return acknowledged() + " increments acknowledged, " + incrementsUnknown() + " failed; " + granted()
        + " permits granted, " + decisionsUnknown() + " decisions failed; longest call "
        + TimeUnit.NANOSECONDS.toMillis(longestCallNanos()) + " ms (" + longestCall() + ")";
  }

  /** Which thread made the longest call, and how it ended. Read after {@link #stop}. */
  private String longestCall() {
    return all().stream().max(Comparator.comparingLong(w -> w.longestNanos))
        .map(w -> w.getName() + ", " + w.longestOutcome).orElse("none");
  }

  private final class Worker extends Thread {
    private final Call call;
    // written by this thread alone, read after join(), which orders them
    long acknowledged;
    long failed;
    long longestNanos;
    /** How the longest call ended: "answered", or the failure's message. */
    String longestOutcome = "none";
    Throwable unexpected;
    /** Read while the thread runs: when the last call succeeded, and the first after each failure. */
    volatile long lastSuccessAt = Long.MIN_VALUE;
    private final List<long[]> successesAfterFailures = new ArrayList<>(); // guarded by itself

    Worker(String name, Call call) {
      super(name);
      setDaemon(true);
      this.call = call;
    }

    long firstSuccessSince(long nanoTime) {
      synchronized (successesAfterFailures) {
        for (long[] s : successesAfterFailures) {
          if (s[0] >= nanoTime) {
            return s[0];
          }
        }
      }
      long last = lastSuccessAt;
      return last >= nanoTime ? last : Long.MAX_VALUE;
    }

    @Override
    public void run() {
      boolean failing = true; // the first success is recorded too
      while (!stop) {
        long started = System.nanoTime();
        String outcome = "answered";
        try {
          acknowledged += call.run();
          long now = System.nanoTime();
          if (failing) {
            synchronized (successesAfterFailures) {
              successesAfterFailures.add(new long[] {now});
            }
            failing = false;
          }
          lastSuccessAt = now;
        } catch (StoreException e) {
          failed++;
          failing = true;
          outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
        } catch (Throwable t) {
          unexpected = t;
          return;
        } finally {
          long took = System.nanoTime() - started;
          if (took > longestNanos) {
            longestNanos = took;
            longestOutcome = outcome;
          }
        }
        if (failing) {
          try {
            Thread.sleep(10); // the server is away: pace the retries, as a client would
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }
  }

  @FunctionalInterface
  private interface Call {
    /** Makes one call; returns what it acknowledged (increments, or permits granted). */
    long run();
  }
}
