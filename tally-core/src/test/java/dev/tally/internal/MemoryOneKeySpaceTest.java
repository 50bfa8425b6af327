package dev.tally.internal;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.WrongKindException;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/** The {@code mem:} store keeps counters and limiters in one map: a name holds one kind. */
class MemoryOneKeySpaceTest {

  @Test
  void bothKindsLiveInOneMapAndOneSweepDropsBoth() {
    AtomicLong now = new AtomicLong(1_000_000_000L);
    try (Tally t = Tally.builder("mem:").timeSource(now::get).build()) {
      MemoryStore store = (MemoryStore) ((TallyRuntime) t).store();
      t.counters().put("c", 1, Duration.ofSeconds(1));
      t.limiter("l", Limit.tokenBucket(10, Duration.ofSeconds(1))).tryAcquire();
      assertThat(store.size()).isEqualTo(2);
      assertThat(store.limiters().size()).isEqualTo(1);
      now.addAndGet(Duration.ofSeconds(2).toNanos());
      assertThat(store.sweep()).isEqualTo(2);
      assertThat(store.size()).isZero();
    }
  }

  @Test
  void anExpiredCounterAndAFullLimiterFreeTheirNamesForTheOtherKind() {
    AtomicLong now = new AtomicLong(1_000_000_000L);
    try (Tally t = Tally.builder("mem:").timeSource(now::get).build()) {
      Counters c = t.counters();
      RateLimiter onCounter = t.limiter("was-counter", Limit.tokenBucket(10, Duration.ofSeconds(1)));
      c.put("was-counter", 5, Duration.ofSeconds(1));
      assertThatThrownBy(onCounter::tryAcquire).isInstanceOf(WrongKindException.class);
      now.addAndGet(Duration.ofSeconds(2).toNanos());
      assertThat(onCounter.tryAcquire()).isTrue();
      assertThatThrownBy(() -> c.get("was-counter")).isInstanceOf(WrongKindException.class);
      now.addAndGet(Duration.ofSeconds(2).toNanos()); // the bucket is full again: no state
      assertThat(c.incr("was-counter")).isEqualTo(1);
      assertThatThrownBy(() -> onCounter.decide(1)).isInstanceOf(WrongKindException.class);
    }
  }

  /**
   * Threads race to take fresh names, half as counters ({@code incr}) and half as limiters (an
   * acquire from a bucket that never refills within the test). Whichever kind won a name, the
   * other kind's calls on it were all refused, and the winner's count is exact.
   */
  @Test
  void racingKindsNeverShareAName() throws InterruptedException {
    int names = 200;
    int perThread = 50;
    int threadsPerKind = 4;
    // The clock stands still: the bucket never refills, so every grant shows in its remaining.
    try (Tally t = Tally.builder("mem:").timeSource(() -> 1_000_000_000L).build()) {
      Counters c = t.counters("race");
      AtomicLongArray incrs = new AtomicLongArray(names);
      AtomicLongArray grants = new AtomicLongArray(names);
      RateLimiter[] limiters = new RateLimiter[names];
      for (int n = 0; n < names; n++) {
        limiters[n] = t.limiter("race:n" + n, Limit.tokenBucket(1_000_000, Duration.ofDays(1)));
      }
      List<Throwable> unexpected = new java.util.concurrent.CopyOnWriteArrayList<>();
      CountDownLatch start = new CountDownLatch(1);
      java.util.concurrent.CyclicBarrier homesTaken = new java.util.concurrent.CyclicBarrier(2 * threadsPerKind);
      List<Thread> threads = new ArrayList<>();
      for (int k = 0; k < 2 * threadsPerKind; k++) {
        boolean counter = k % 2 == 0;
        int thread = k;
        int offset = k * names / (2 * threadsPerKind); // each thread starts on other names
        threads.add(new Thread(() -> {
          try {
            start.await();
            for (int n = thread; n < names / 2; n += 2 * threadsPerKind) {
              if (counter) {
                c.incr("n" + n);
                incrs.incrementAndGet(n);
              } else if (limiters[n].tryAcquire()) {
                grants.incrementAndGet(n);
              }
            }
            homesTaken.await();
          } catch (InterruptedException | java.util.concurrent.BrokenBarrierException e) {
            Thread.currentThread().interrupt();
            return;
          }
          for (int round = 0; round < perThread; round++) {
            for (int i = 0; i < names; i++) {
              int n = (offset + i) % names;
              try {
                if (counter) {
                  c.incr("n" + n);
                  incrs.incrementAndGet(n);
                } else if (limiters[n].tryAcquire()) {
                  grants.incrementAndGet(n);
                }
              } catch (WrongKindException refused) {
                // the other kind holds the name
              } catch (RuntimeException | Error e) {
                unexpected.add(e);
                return;
              }
            }
          }
        }));
      }
      threads.forEach(Thread::start);
      start.countDown();
      for (Thread th : threads) {
        th.join();
      }
      assertThat(unexpected).isEmpty();
      int counterNames = 0;
      for (int n = 0; n < names; n++) {
        counterNames += incrs.get(n) > 0 ? 1 : 0;
        assertThat(incrs.get(n) == 0 || grants.get(n) == 0)
            .as("name n%d: %d increments and %d grants", n, incrs.get(n), grants.get(n)).isTrue();
        if (incrs.get(n) > 0) {
          assertThat(c.get("n" + n)).hasValue(incrs.get(n));
        } else {
          assertThat(grants.get(n)).isEqualTo((long) perThread * threadsPerKind + (n < names / 2 ? 1 : 0));
          assertThat(limiters[n].decide(0).remaining())
              .isEqualTo(1_000_000 - grants.get(n));
        }
      }
      assertThat(counterNames).as("names won by counters").isBetween(names / 4, names - names / 4);
    }
  }
}
