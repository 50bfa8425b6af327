package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.tck.ChildJvm;
import dev.tally.tck.MappedTimeSource;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Leased handles in several JVMs on one {@code file:} store, on a test clock all of them read
 * ({@link MappedTimeSource}): the guarantees docs/limiters.md states, checked exactly. The test
 * moves the clock a millisecond at a time and waits at each step until every thread of every
 * process has made its calls ({@link LeasedLimiterWorker#attempts}), so each grant's instant is
 * known to the nanosecond and nothing depends on how fast the machine is. Then:
 *
 * <ul>
 *   <li>the token bucket: no interval of any length {@code T} sees more than
 *       {@code capacity + rate × (T + d)} grants; the window: no window more than its limit;
 *   <li>no permit granted twice: in every process, the permits the store leased to it are those
 *       it granted plus those it gave back; and the bucket's consumption, read from the store at
 *       the end, is the grants plus the permits dropped;
 *   <li>the under-admission, what a plain limiter would have granted the same demand less what
 *       was granted, at every step (buckets) and in every window, within {@code P × 2k} plus the
 *       permits dropped (none, unless a lease's background tick came too late).
 * </ul>
 *
 * <p>See {@link LeasedLimiterWorker} for the children.
 */
class LeasedLimiterProcessesTest {
  private static final int PROCESSES = 3;
  private static final int THREADS = 3;
  private static final int STEPS = 1_500;
  private static final long STEP_NANOS = Duration.ofMillis(1).toNanos();
  /** Aligned to the epoch's 10 ms windows, so step 10w is the first of window w. */
  private static final Instant START = Instant.parse("2026-11-08T00:00:00Z");
  /**
   * How long the test waits for a child to start, a step to be done everywhere, or a child to
   * report: generous for a loaded machine; only a stuck or dead child takes that long.
   */
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir
  Path dir;

  /** What each process reported for one limiter. */
  private record Report(long[] grants, long leased, long returned, long expired, long dropped, long refills) {
    long granted() {
      long sum = 0;
      for (long g : grants) {
        sum += g;
      }
      return sum;
    }
  }

  @Test
  void leasedHandlesInThreeProcessesStayWithinTheStatedBoundsOnATestClock() throws Exception {
    Path data = dir.resolve("tally-data");
    MappedTimeSource clock = MappedTimeSource.create(dir.resolve("clock"), START, PROCESSES * THREADS);
    long t0 = clock.nanos();
    List<ChildJvm> children = new ArrayList<>();
    List<List<Report>> reports = new ArrayList<>(); // [limiter][process]
    LeasedLimiterWorker.LIMITERS.forEach(name -> reports.add(new ArrayList<>()));
    long wallStart = System.nanoTime();
    try {
      for (int p = 0; p < PROCESSES; p++) {
        children.add(ChildJvm.start(LeasedLimiterWorker.class, data.toString(), dir.resolve("clock").toString(),
            Integer.toString(p), Integer.toString(THREADS), Integer.toString(STEPS),
            Long.toString(STEP_NANOS)));
      }
      for (ChildJvm c : children) {
        c.await("READY", WAIT.toMillis());
      }
      for (int s = 0; s < STEPS; s++) {
        long at = t0 + s * STEP_NANOS;
        clock.setNanos(at);
        try {
          clock.awaitProgress(at, WAIT);
        } catch (AssertionError stuck) {
          throw new AssertionError(stuck.getMessage() + "; the children printed " + failures(children), stuck);
        }
      }
      for (ChildJvm c : children) {
        c.await("DONE", WAIT.toMillis());
      }
      assertThat(failures(children)).as("threads that failed").isEmpty();
      for (ChildJvm c : children) {
        for (int l = 0; l < LeasedLimiterWorker.LIMITERS.size(); l++) {
          reports.get(l).add(report(c, LeasedLimiterWorker.LIMITERS.get(l)));
        }
      }
    } finally {
      children.forEach(ChildJvm::close);
    }
    double seconds = (System.nanoTime() - wallStart) / 1e9;
    System.out.printf("leased, %d processes x %d threads, %d steps of 1 ms on a shared test clock (%.1f s of"
        + " wall time)%n", PROCESSES, THREADS, STEPS, seconds);
    long tEnd = t0 + (STEPS - 1) * STEP_NANOS;
    List<String> names = LeasedLimiterWorker.LIMITERS;
    checkBucket("lease-bucket", reports.get(names.indexOf("lease-bucket")), true, data, clock, t0, tEnd);
    checkWindow("lease-window", reports.get(names.indexOf("lease-window")));
    checkBucket("lease-bursty", reports.get(names.indexOf("lease-bursty")), false, data, clock, t0, tEnd);
  }

  /**
   * A token bucket: (a) the bound over every interval of steps; (b) each process's book and, for
   * {@code storeBook}, the store's; (c) the under-admission against a plain bucket simulated on
   * the same demand, from each {@code phaseStart} (a step at which both are full: the start, or
   * after a pause longer than the bucket's refill time plus d).
   */
  private void checkBucket(String name, List<Report> processes, boolean storeBook, Path data, MappedTimeSource clock,
      long t0, long tEnd) {
    Limit limit = LeasedLimiterWorker.BUCKET;
    long capacity = limit.limit();
    long unit = limit.intervalNanos(); // nanoseconds per token: STEP_NANOS is a multiple, so no rounding
    long d = LeasedLimiterWorker.LEASE_TIME.toNanos();
    long k = Math.min(LeasedLimiterWorker.MAX_BLOCK, capacity / 8);
    long[] perStep = merged(processes);
    long[] before = new long[STEPS + 1]; // grants before step s
    for (int s = 0; s < STEPS; s++) {
      before[s + 1] = before[s] + perStep[s];
    }

    // (a) Every interval [step i, step j]: at most capacity + rate × (T + d).
    long leastSlack = Long.MAX_VALUE;
    long overPlain = Long.MIN_VALUE; // the most an interval took of the lease's rate × d
    String tightest = "";
    for (int i = 0; i < STEPS; i++) {
      for (int j = i; j < STEPS; j++) {
        long span = (j - i) * STEP_NANOS;
        long seen = before[j + 1] - before[i];
        long bound = capacity + (span + d) / unit;
        if (seen > bound) {
          throw new AssertionError(name + ": steps " + i + " to " + j + " (T = " + span + " ns) granted " + seen
              + ", over the bound capacity + rate x (T + d) = " + bound);
        }
        if (bound - seen < leastSlack) {
          leastSlack = bound - seen;
          tightest = "steps " + i + " to " + j;
        }
        overPlain = Math.max(overPlain, seen - (capacity + span / unit));
      }
    }

    // (b) No permit granted twice: each process's book, then the store's.
    Book book = book(name, processes);
    long granted = before[STEPS];
    if (storeBook) {
      long available;
      try (Tally t = Tally.builder("file:" + data).timeSource(clock).build()) {
        available = t.limiter(name, limit).available(); // at the last step's instant
      }
      // The bucket was full only at t0 (demand above its rate never paused after), so it has
      // refilled exactly rate × (tEnd - t0) since, and every permit it lacks was taken and kept.
      long consumed = capacity + (tEnd - t0) / unit - available;
      assertThat(book.leased - book.refunded).as("%s: taken from the bucket = leased less refunded", name)
          .isEqualTo(consumed);
      assertThat(granted + book.dropped).as("%s: taken from the bucket = granted + dropped", name)
          .isEqualTo(consumed);
    }

    // (c) Under-admission at every step: what a plain bucket would have granted the same demand
    // since the phase began, less what was granted.
    long tokens = capacity;
    long ideal = 0;
    long idealAtPhase = 0;
    long grantedAtPhase = 0;
    long worst = Long.MIN_VALUE;
    int worstStep = -1;
    for (int s = 0; s < STEPS; s++) {
      if (s > 0) {
        tokens = Math.min(capacity, tokens + STEP_NANOS / unit);
      }
      if (phaseStart(name, s)) {
        assertThat(tokens).as("%s: the simulated bucket is full when a phase starts", name).isEqualTo(capacity);
        idealAtPhase = ideal;
        grantedAtPhase = before[s];
      }
      long allowed = Math.min(demand(name, s), tokens);
      tokens -= allowed;
      ideal += allowed;
      long under = (ideal - idealAtPhase) - (before[s + 1] - grantedAtPhase);
      if (under > worst) {
        worst = under;
        worstStep = s;
      }
    }
    long bound = PROCESSES * 2 * k;
    System.out.printf("  %s: token bucket %d, +%d/s, d = %d ms, k = %d: %d granted of %d demanded (per process %s),"
        + " %s; least slack below capacity + rate x (T + d): %d (%s); most over capacity + rate x T: %d;"
        + " under-admission at worst %d (step %d), bound P x 2k = %d%n", name, capacity, 1_000_000_000L / unit,
        d / 1_000_000, k, granted, totalDemand(name), processes.stream().map(Report::granted).toList(), book,
        leastSlack, tightest, overPlain, worst, worstStep, bound);
    // Permits dropped (a tick too late to return them in time) under-admit beyond what is parked.
    assertThat(worst).as("%s: under-admission at step %d, %d dropped", name, worstStep, book.dropped())
        .isLessThanOrEqualTo(bound + book.dropped());
    assertThat(processes.stream().filter(r -> r.granted() > 0).count()).as("%s: processes granted permits", name)
        .isEqualTo(PROCESSES);
  }

  /** The fixed window: at most its limit in each, and the under-admission in each. */
  private void checkWindow(String name, List<Report> processes) {
    Limit limit = LeasedLimiterWorker.WINDOW;
    long perWindow = limit.limit();
    int stepsPerWindow = (int) (limit.intervalNanos() / STEP_NANOS);
    long k = Math.min(LeasedLimiterWorker.MAX_BLOCK, perWindow / 8);
    long[] perStep = merged(processes);
    long granted = 0;
    long worstUnder = Long.MIN_VALUE;
    long most = 0;
    int windows = STEPS / stepsPerWindow;
    for (int w = 0; w < windows; w++) {
      long inWindow = 0;
      long demanded = 0;
      for (int s = w * stepsPerWindow; s < (w + 1) * stepsPerWindow; s++) {
        inWindow += perStep[s];
        demanded += demand(name, s);
      }
      assertThat(inWindow).as("%s: grants in window %d", name, w).isLessThanOrEqualTo(perWindow);
      most = Math.max(most, inWindow);
      worstUnder = Math.max(worstUnder, Math.min(perWindow, demanded) - inWindow);
      granted += inWindow;
    }
    Book book = book(name, processes);
    long bound = PROCESSES * 2 * k;
    System.out.printf("  %s: fixed window %d / %d ms, k = %d: %d granted of %d demanded in %d windows, at most %d in"
        + " one; %s; under-admission in a window at worst %d, bound P x 2k = %d%n", name, perWindow,
        limit.intervalNanos() / 1_000_000, k, granted, totalDemand(name), windows, most, book, worstUnder, bound);
    assertThat(worstUnder).as("%s: under-admission in a window, %d dropped", name, book.dropped())
        .isLessThanOrEqualTo(bound + book.dropped());
  }

  /** Permits leased to the processes, refunded to the store, and dropped, summed. */
  private record Book(long leased, long refunded, long dropped, long refills) {
    @Override
    public String toString() {
      return leased + " leased in " + refills + " refills, " + refunded + " refunded, " + dropped + " dropped";
    }
  }

  /** Checks that each process leased exactly what it granted and gave back, and sums the books. */
  private static Book book(String name, List<Report> processes) {
    long leased = 0;
    long refunded = 0;
    long dropped = 0;
    long refills = 0;
    for (Report r : processes) {
      assertThat(r.leased()).as("%s: permits leased to a process = granted + returned + expired", name)
          .isEqualTo(r.granted() + r.returned() + r.expired());
      leased += r.leased();
      refunded += r.returned() + r.expired() - r.dropped();
      dropped += r.dropped();
      refills += r.refills();
    }
    return new Book(leased, refunded, dropped, refills);
  }

  /** The permits all threads ask {@code name} for at step {@code s}. */
  private static long demand(String name, int s) {
    long sum = 0;
    for (int p = 0; p < PROCESSES; p++) {
      sum += (long) LeasedLimiterWorker.attempts(name, p, s) * THREADS;
    }
    return sum;
  }

  private static long totalDemand(String name) {
    long sum = 0;
    for (int s = 0; s < STEPS; s++) {
      sum += demand(name, s);
    }
    return sum;
  }

  /**
   * Whether a phase of demand starts at step {@code s} with the store's bucket full, as a plain
   * one would be: the first step, and each cycle of "lease-bursty", whose pauses outlast the
   * bucket's refill time plus d (every stock went back, or expired, and the bucket refilled).
   */
  private static boolean phaseStart(String name, int s) {
    return s == 0 || name.equals("lease-bursty") && s % LeasedLimiterWorker.CYCLE == 0;
  }

  private static long[] merged(List<Report> processes) {
    long[] sum = new long[STEPS];
    for (Report r : processes) {
      for (int s = 0; s < STEPS; s++) {
        sum[s] += r.grants()[s];
      }
    }
    return sum;
  }

  private static Report report(ChildJvm child, String name) throws InterruptedException {
    String[] g = child.await("GRANTS " + name + " ", WAIT.toMillis()).split(" ");
    long[] grants = new long[g.length - 2];
    for (int i = 0; i < grants.length; i++) {
      grants[i] = Long.parseLong(g[i + 2]);
    }
    assertThat(grants).as("steps reported").hasSize(STEPS);
    String[] b = child.await("BOOK " + name + " ", WAIT.toMillis()).split(" ");
    return new Report(grants, Long.parseLong(b[2]), Long.parseLong(b[3]), Long.parseLong(b[4]),
        Long.parseLong(b[5]), Long.parseLong(b[6]));
  }

  private static List<String> failures(List<ChildJvm> children) {
    List<String> failed = new ArrayList<>();
    for (ChildJvm c : children) {
      failed.addAll(c.linesStartingWith("FAILED"));
    }
    return failed;
  }
}
