package dev.tally.tck;

import dev.tally.ConcurrencyLimit;
import dev.tally.Lease;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Two parties on one concurrency limit through two handles (two Tally instances, so two lines of
 * waiters): a greedy one whose threads re-acquire the moment they release, and a patient one
 * whose waiters arrive while the greedy one holds every permit. Without an order kept in the
 * store, the greedy party's own release wakes its own next waiter at once and it takes every
 * permit it frees, while the patient party only looks again after a backoff: it can wait for
 * ever. The outcome says how long each patient acquire waited.
 *
 * @param waitsNanos the waits of the patient acquires that were granted, sorted
 * @param refused the patient acquires that waited their whole {@code maxWait} in vain
 * @param greedyGrants the leases the greedy party was granted meanwhile
 */
record GreedyAndPatient(List<Long> waitsNanos, int refused, long greedyGrants) {
  private static final Duration TTL = Duration.ofSeconds(30);

  /**
   * Runs the two parties: {@code greedyThreads} threads of {@code greedy} hold each lease of one
   * permit {@code holdNanos} and re-acquire at once; once they have taken a few rounds,
   * {@code waiters} threads of {@code patient} each make {@code rounds} acquires of
   * {@code patientWeight} permits of up to {@code maxWait}, holding each lease {@code holdNanos}.
   * The greedy party stops when the patient one is done. A patient weight above 1 is the hardest
   * case: that many permits must be free at once, while the greedy party takes each one back as
   * soon as it frees it.
   */
  static GreedyAndPatient run(ConcurrencyLimit greedy, ConcurrencyLimit patient, int greedyThreads, long holdNanos,
      int waiters, long patientWeight, int rounds, Duration maxWait) throws InterruptedException {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong greedyGrants = new AtomicLong();
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    List<Thread> greedyParty = new ArrayList<>();
    for (int i = 0; i < greedyThreads; i++) {
      greedyParty.add(start("greedy-" + i, failures, () -> {
        while (!stop.get()) {
          Optional<Lease> l = greedy.acquire(TTL, Duration.ofSeconds(1));
          if (l.isPresent()) {
            greedyGrants.incrementAndGet();
            LockSupport.parkNanos(holdNanos);
            l.get().release(); // and at once the next acquire
          }
        }
      }));
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (greedyGrants.get() < 2L * greedyThreads && System.nanoTime() < deadline && failures.isEmpty()) {
      Thread.sleep(1); // the greedy party is up to speed, holding every permit it can
    }
    ConcurrentLinkedQueue<Long> waits = new ConcurrentLinkedQueue<>();
    AtomicLong refused = new AtomicLong();
    List<Thread> patientParty = new ArrayList<>();
    for (int i = 0; i < waiters; i++) {
      patientParty.add(start("patient-" + i, failures, () -> {
        for (int r = 0; r < rounds; r++) {
          long t0 = System.nanoTime();
          Optional<Lease> l = patient.acquire(patientWeight, TTL, maxWait);
          if (l.isEmpty()) {
            refused.incrementAndGet();
            continue;
          }
          waits.add(System.nanoTime() - t0);
          LockSupport.parkNanos(holdNanos);
          l.get().release();
        }
      }));
    }
    try {
      for (Thread t : patientParty) {
        t.join();
      }
    } finally {
      stop.set(true);
      for (Thread t : greedyParty) {
        t.join();
      }
    }
    if (!failures.isEmpty()) {
      throw new AssertionError("a party's thread failed: " + failures.peek(), failures.peek());
    }
    List<Long> sorted = new ArrayList<>(waits);
    Collections.sort(sorted);
    return new GreedyAndPatient(sorted, (int) refused.get(), greedyGrants.get());
  }

  /** The longest granted wait, in milliseconds. */
  long maxWaitMillis() {
    return waitsNanos.isEmpty() ? 0 : TimeUnit.NANOSECONDS.toMillis(waitsNanos.get(waitsNanos.size() - 1));
  }

  /** The median granted wait, in milliseconds. */
  long medianWaitMillis() {
    return waitsNanos.isEmpty() ? 0 : TimeUnit.NANOSECONDS.toMillis(waitsNanos.get(waitsNanos.size() / 2));
  }

  @Override
  public String toString() {
    return waitsNanos.size() + " patient acquires granted (median wait " + medianWaitMillis() + " ms, longest "
        + maxWaitMillis() + " ms), " + refused + " waited in vain; the greedy party was granted " + greedyGrants
        + " leases meanwhile";
  }

  /** A body that may throw. */
  private interface Body {
    void run() throws Exception;
  }

  private static Thread start(String name, ConcurrentLinkedQueue<Throwable> failures, Body body) {
    Thread t = new Thread(() -> {
      try {
        body.run();
      } catch (Exception | AssertionError e) {
        failures.add(e);
      }
    }, name);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
