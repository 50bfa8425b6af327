package dev.tally.local;

import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.tck.MappedTimeSource;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A child process of {@link LeasedLimiterProcessesTest}: opens {@code file:DIR} on the test clock
 * in the file CLOCK, a leased handle of each limiter of {@link #LIMITERS}, and prints READY. Then
 * THREADS threads (participants P × THREADS, P × THREADS + 1, ... of the clock) each run STEPS
 * steps: at the step's instant (the clock's start plus STEP_NANOS a step), for each limiter in
 * turn, ask for {@link #attempts} permits one at a time, count the grants, and publish the step
 * done. The clock does not move during a step, so every grant of the step was decided at its
 * instant. After the last step it closes the leases (at the last step's instant, returning their
 * stocks) and prints, for each limiter {@code name}:
 *
 * <pre>
 * GRANTS name g0 g1 ...                   grants at each step, all threads together
 * BOOK name leased returned expired dropped refills   from the {@link TallyListener} lease events:
 *                                         permits the store leased to this process; those given
 *                                         back unused at close or when demand fell, and at the end
 *                                         of their time (refunded or dropped alike); of those, the
 *                                         ones dropped (not refunded); refills that got permits
 * </pre>
 *
 * then DONE. A thread that fails prints FAILED and the cause, and publishes progress past every
 * step so the others go on. Usage:
 * {@code LeasedLimiterWorker DIR CLOCK P THREADS STEPS STEP_NANOS}, P the process's number from 0.
 */
public final class LeasedLimiterWorker {
  /** A burst of 128, then 4 a millisecond (a token every 250 µs): a block is at most 128 / 8 = 16. */
  static final Limit BUCKET = Limit.tokenBucket(128, 4_000, Duration.ofSeconds(1));
  /** 40 a window of 10 ms, aligned to the epoch: a block is at most 40 / 8 = 5. */
  static final Limit WINDOW = Limit.fixedWindow(40, Duration.ofMillis(10));
  /** The most permits in one block. */
  static final long MAX_BLOCK = 16;
  /** The lease time d. */
  static final Duration LEASE_TIME = Duration.ofMillis(20);

  /**
   * The limiters, by name: each process leases a handle of each. "lease-bucket" and
   * "lease-window" see the same demand, above their rate, at every step; "lease-bursty", the
   * same bucket, sees each process's demand stop and start (so stocks sit unused in one process
   * while others are denied, and are returned into a refilling bucket: the cases of the
   * under-admission bound and of the {@code rate × d} in the bucket's), with a pause for all at
   * the end of every {@link #CYCLE}.
   */
  static final List<String> LIMITERS = List.of("lease-bucket", "lease-window", "lease-bursty");
  /** Steps of a cycle of "lease-bursty": a phase of demand, then a pause of {@link #PAUSE}. */
  static final int CYCLE = 300;
  /** Longer than the bucket's refill time (32 ms) plus d: the bucket is full when the next phase starts. */
  static final int PAUSE = 60;
  /** The step of a cycle at which everyone asks at once, after process 0 alone at its first. */
  private static final int OVERTURE = 8;
  /** How many steps one level of a process's demand on "lease-bursty" lasts. */
  private static final int CHUNK = 5;
  /** A process's demand levels on "lease-bursty", per thread: idle half the time. */
  private static final int[] LEVELS = {0, 0, 1, 3};

  static Limit limit(String name) {
    return name.equals("lease-window") ? WINDOW : BUCKET;
  }

  /**
   * How many permits each thread of process {@code process} asks {@code name} for, one at a time,
   * at step {@code s}: a fixed function, so the test knows the demand it simulates a plain
   * limiter on.
   */
  static int attempts(String name, int process, int s) {
    if (!name.equals("lease-bursty")) {
      return 1;
    }
    int c = s % CYCLE;
    if (c >= CYCLE - PAUSE) {
      return 0;
    }
    // The cycle opens on a full bucket: process 0 leases a few blocks and uses part of them,
    // the bucket refills what it took before those blocks' time is up, and everyone then asks
    // for far more than the bucket holds: what is left of the blocks comes on top of a full
    // bucket, the case the rate × d in the bound allows for (unless a tick saw the demand fall
    // and returned the blocks first).
    if (c < OVERTURE) {
      return c == 0 && process == 0 ? 4 : 0;
    }
    if (c == OVERTURE) {
      return 20;
    }
    long h = (process + 1) * 0x9E3779B97F4A7C15L + (s / CHUNK) * 0xC2B2AE3D27D4EB4FL;
    h ^= h >>> 31;
    h *= 0xBF58476D1CE4E5B9L;
    h ^= h >>> 29;
    return LEVELS[(int) Math.floorMod(h, (long) LEVELS.length)];
  }

  private static final int LEASED = 0;
  private static final int RETURNED = 1;
  private static final int EXPIRED = 2;
  private static final int DROPPED = 3;
  private static final int REFILLS = 4;

  private LeasedLimiterWorker() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    MappedTimeSource clock = MappedTimeSource.open(Path.of(args[1]));
    int process = Integer.parseInt(args[2]);
    int threads = Integer.parseInt(args[3]);
    int steps = Integer.parseInt(args[4]);
    long stepNanos = Long.parseLong(args[5]);
    long start = clock.nanos();
    int n = LIMITERS.size();
    AtomicLongArray book = new AtomicLongArray(5 * n);
    TallyListener listener = new TallyListener() {
      private int index(String key) {
        for (int i = 0; i < n; i++) {
          if (key.endsWith(LIMITERS.get(i))) {
            return 5 * i;
          }
        }
        throw new IllegalArgumentException(key);
      }

      @Override
      public void onLeaseRefill(String key, long requested, long granted) {
        book.addAndGet(index(key) + LEASED, granted);
        if (granted > 0) {
          book.incrementAndGet(index(key) + REFILLS);
        }
      }

      @Override
      public void onLeaseReturned(String key, long permits, boolean refunded) {
        book.addAndGet(index(key) + RETURNED, permits);
        book.addAndGet(index(key) + DROPPED, refunded ? 0 : permits);
      }

      @Override
      public void onLeaseExpired(String key, long permits, boolean refunded) {
        book.addAndGet(index(key) + EXPIRED, permits);
        book.addAndGet(index(key) + DROPPED, refunded ? 0 : permits);
      }
    };
    long[][] grants = new long[n][steps];
    try (Tally tally = Tally.builder("file:" + dir).timeSource(clock).listener(listener).build()) {
      List<LeasedRateLimiter> leases = new ArrayList<>();
      for (String name : LIMITERS) {
        leases.add(tally.limiter(name, limit(name)).leased(MAX_BLOCK, LEASE_TIME));
      }
      System.out.println("READY");
      System.out.flush();
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int participant = process * threads + t;
        Thread w = new Thread(() -> {
          try {
            long[][] mine = new long[n][steps];
            for (int s = 0; s < steps; s++) {
              long at = clock.awaitTime(start + s * stepNanos, Duration.ofMinutes(2));
              if (at != start + s * stepNanos) {
                throw new IllegalStateException("step " + s + " found the clock at " + at);
              }
              for (int l = 0; l < n; l++) {
                LeasedRateLimiter lease = leases.get(l);
                for (int a = attempts(LIMITERS.get(l), process, s); a > 0; a--) {
                  if (lease.tryAcquire()) {
                    mine[l][s]++;
                  }
                }
              }
              if (clock.nanos() != at) {
                throw new IllegalStateException("the clock moved during step " + s + " of participant " + participant);
              }
              clock.done(participant, at);
            }
            synchronized (grants) {
              for (int l = 0; l < n; l++) {
                for (int s = 0; s < steps; s++) {
                  grants[l][s] += mine[l][s];
                }
              }
            }
          } catch (RuntimeException e) {
            e.printStackTrace();
            System.out.println("FAILED " + e);
            System.out.flush();
            clock.done(participant, Long.MAX_VALUE); // out of every later step: the test fails on FAILED
          }
        }, "leased-" + participant);
        w.start();
        workers.add(w);
      }
      for (Thread w : workers) {
        w.join();
      }
      leases.forEach(LeasedRateLimiter::close);
    }
    for (int l = 0; l < n; l++) {
      StringBuilder line = new StringBuilder("GRANTS ").append(LIMITERS.get(l));
      for (long g : grants[l]) {
        line.append(' ').append(g);
      }
      System.out.println(line);
      int o = 5 * l;
      System.out.println("BOOK " + LIMITERS.get(l) + " " + book.get(o + LEASED) + " " + book.get(o + RETURNED)
          + " " + book.get(o + EXPIRED) + " " + book.get(o + DROPPED) + " " + book.get(o + REFILLS));
    }
    System.out.println("DONE");
    System.out.flush();
  }
}
