package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Lease;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Two lines of waiters on one {@code mem:} store, as two processes would have on a shared store
 * (the kit cannot open a second {@code mem:} instance on the same map): the store's queue of
 * tickets orders them.
 */
class FairWaitersTest {
  private static final Duration TTL = Duration.ofSeconds(30);

  private final AtomicReference<Long> now = new AtomicReference<>(1_800_000_000_000_000_000L);
  private final MemoryStore store = new MemoryStore(now::get, Duration.ofHours(1).toNanos());

  private DefaultConcurrencyLimit limit(ConcurrencyWaiters line, long max) {
    return new DefaultConcurrencyLimit("jobs", "conc:jobs", max, store, line);
  }

  @Test
  void aWaiterOfAnotherLineIsServedBeforeTheLineThatReacquiresAtOnce() throws Exception {
    DefaultConcurrencyLimit greedy = limit(new ConcurrencyWaiters(), 2);
    DefaultConcurrencyLimit patient = limit(new ConcurrencyWaiters(), 2);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong greedyGrants = new AtomicLong();
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Thread t = new Thread(() -> {
        try {
          while (!stop.get()) {
            Optional<Lease> l = greedy.acquire(TTL, Duration.ofSeconds(1));
            if (l.isPresent()) {
              greedyGrants.incrementAndGet();
              l.get().release();
            }
          }
        } catch (InterruptedException | RuntimeException e) {
          failures.add(e);
        }
      });
      t.start();
      threads.add(t);
    }
    try {
      while (greedyGrants.get() < 20) {
        Thread.sleep(1);
      }
      for (int i = 0; i < 5; i++) {
        long t0 = System.nanoTime();
        // within a few 50 ms looks; 10 s is slack for a loaded machine
        Lease l = patient.acquire(TTL, Duration.ofSeconds(10)).orElseThrow();
        assertThat(System.nanoTime() - t0).isLessThan(TimeUnit.SECONDS.toNanos(10));
        l.release();
      }
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
    }
    assertThat(failures).isEmpty();
  }

  @Test
  void aWaiterThatGivesUpWithdrawsItsTicket() throws Exception {
    DefaultConcurrencyLimit a = limit(new ConcurrencyWaiters(), 1);
    DefaultConcurrencyLimit b = limit(new ConcurrencyWaiters(), 1);
    Lease held = a.tryAcquire(TTL).orElseThrow();
    assertThat(b.acquire(TTL, Duration.ofMillis(20))).isEmpty(); // queued, then gave up
    held.release();
    // the clock has not moved: only the withdrawal lets a caller without a ticket in
    assertThat(a.tryAcquire(TTL)).isPresent();
  }
}
