package dev.tally.internal;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyException;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Counters and limiters share one key space in the memory store too: a name is one or the
 * other while it is live, and a lapsed one (a limiter full again, a counter expired) leaves its
 * name to the other kind, whose handles then refuse the first kind's.
 */
class MemoryKeySpaceTest {
  private final AtomicLong clock = new AtomicLong(1_800_000_000_000_000_000L);

  @Test
  void aLimiterFullAgainLeavesItsNameToACounterAndItsHandleThenRefuses() {
    try (Tally tally = Tally.builder("mem:").timeSource(clock::get).build()) {
      RateLimiter limiter = tally.limiter("k", Limit.tokenBucket(5, Duration.ofMinutes(1)));
      assertThat(limiter.tryAcquire()).isTrue();
      assertThatThrownBy(() -> tally.counters().incr("k")).as("while live").isInstanceOf(TallyException.class);
      clock.addAndGet(Duration.ofMinutes(2).toNanos()); // full again: no state to keep
      assertThat(tally.counters().incr("k")).isEqualTo(1);
      assertThatThrownBy(limiter::tryAcquire).isInstanceOf(TallyException.class).hasMessageContaining("counter");
      assertThat(tally.counters().get("k")).hasValue(1);
    }
  }

  @Test
  void anExpiredCounterLeavesItsNameToALimiterAndIncrementsThenRefuse() {
    try (Tally tally = Tally.builder("mem:").timeSource(clock::get).build()) {
      tally.counters().put("k", 7, Duration.ofSeconds(1));
      clock.addAndGet(Duration.ofSeconds(2).toNanos()); // expired
      RateLimiter limiter = tally.limiter("k", Limit.tokenBucket(5, Duration.ofMinutes(1)));
      assertThat(limiter.tryAcquire()).isTrue();
      assertThatThrownBy(() -> tally.counters().incr("k")).isInstanceOf(TallyException.class)
          .hasMessageContaining("rate limiter");
      assertThat(limiter.available()).isEqualTo(4);
    }
  }

  @Test
  void aCounterAndALimiterCreatingOneNewNameAtOnceNeverBothWin() throws Exception {
    try (Tally tally = Tally.builder("mem:").build()) {
      for (int i = 0; i < 3_000; i++) {
        String name = "race" + i;
        RateLimiter limiter = tally.limiter(name, Limit.tokenBucket(5, Duration.ofMinutes(1)));
        CyclicBarrier start = new CyclicBarrier(2);
        AtomicBoolean counterWon = new AtomicBoolean();
        Thread counter = new Thread(() -> {
          try {
            start.await();
            tally.counters().incr(name);
            counterWon.set(true);
          } catch (TallyException clash) {
            // the limiter took it
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
        counter.start();
        start.await();
        boolean limiterWon;
        try {
          limiter.tryAcquire();
          limiterWon = true;
        } catch (TallyException clash) {
          limiterWon = false;
        }
        counter.join();
        assertThat(counterWon.get() && limiterWon).as("%s became a counter and a limiter", name).isFalse();
      }
    }
  }
}
