package dev.tally.internal;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class TallyTest {

  @Test
  void unknownSchemesSayWhatIsAvailable() {
    assertThatThrownBy(() -> Tally.open("postgres://localhost/db"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown store scheme 'postgres:'")
        .hasMessageContaining("mem:");
  }

  @Test
  void knownStoresWhoseModuleIsMissingSayWhichModuleToAdd() {
    assertThatThrownBy(() -> Tally.open("redis://localhost:6379"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tally-redis");
  }

  @Test
  void malformedUrisAreRefusedClearly() {
    assertThatThrownBy(() -> Tally.open("")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("empty");
    assertThatThrownBy(() -> Tally.open(null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Tally.open("./tally-data")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("scheme");
    assertThatThrownBy(() -> Tally.open("mem:extra")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("takes no options");
  }

  @Test
  void pluginStoresAreFoundWithServiceLoader() {
    try (Tally t = Tally.open("unreachable:")) {
      assertThat(t.uri()).isEqualTo("unreachable:");
    }
  }

  @Test
  void expiredCountersAreSweptAsNewKeysArrive() {
    AtomicLong now = new AtomicLong(1_000_000_000_000L);
    try (Tally t = Tally.builder("mem:").timeSource(now::get).build()) {
      MemoryStore store = (MemoryStore) ((TallyRuntime) t).store();
      Counters c = t.counters();
      for (int i = 0; i < 1000; i++) {
        c.put("old-" + i, i, Duration.ofSeconds(1));
      }
      now.addAndGet(Duration.ofSeconds(2).toNanos());
      for (int i = 0; i < 1000; i++) {
        c.incr("new-" + i);
      }
      // Each insertion sweeps two cells, so 1000 insertions visit every expired one.
      assertThat(store.size()).isLessThan(1100);
      store.sweep();
      assertThat(store.size()).isEqualTo(1000);
    }
  }

  @Test
  void limiterStateIsDroppedOnceFull() {
    AtomicLong now = new AtomicLong(1_000_000_000_000L);
    try (Tally t = Tally.builder("mem:").timeSource(now::get).build()) {
      MemoryStore store = (MemoryStore) ((TallyRuntime) t).store();
      for (int i = 0; i < 500; i++) {
        t.limiter("bucket-" + i, Limit.tokenBucket(10, Duration.ofSeconds(1))).tryAcquire();
        t.limiter("window-" + i, Limit.fixedWindow(10, Duration.ofSeconds(1))).tryAcquire();
      }
      assertThat(store.limiters().size()).isEqualTo(1000);
      now.addAndGet(Duration.ofSeconds(2).toNanos());
      assertThat(store.limiters().sweep()).isEqualTo(1000);
      assertThat(store.limiters().size()).isZero();
      // A full limiter never stores state at all.
      t.limiter("untouched", Limit.tokenBucket(10, Duration.ofSeconds(1))).decide(0);
      assertThat(store.limiters().size()).isZero();
    }
  }

  @Test
  void aLimiterIsNotSweptByItsOwnInsertion() {
    // A clock that moves a nanosecond at every read, and a bucket that refills a token every
    // nanosecond: by the time its insertion sweeps, the new cell is already full again.
    AtomicLong now = new AtomicLong(1_000_000_000_000L);
    try (Tally t = Tally.builder("mem:").timeSource(now::incrementAndGet).build()) {
      MemoryStore store = (MemoryStore) ((TallyRuntime) t).store();
      RateLimiter hot = t.limiter("hot", Limit.tokenBucket(1_000_000_000L, Duration.ofSeconds(1)));
      assertThat(hot.tryAcquire()).isTrue();
      MemoryLimiters.BucketCell cell = store.limiters().bucketCell("hot");
      assertThat(cell).isNotNull();
      for (int i = 0; i < 100; i++) {
        assertThat(hot.tryAcquire()).isTrue();
      }
      // Every later call took the CAS path on the same cell.
      assertThat(store.limiters().bucketCell("hot")).isSameAs(cell);
      // It is still swept like any other full cell.
      assertThat(store.limiters().sweep()).isEqualTo(1);
      assertThat(store.limiters().size()).isZero();
    }
  }
}
