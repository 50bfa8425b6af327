package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spi.Store;
import dev.tally.tck.Concurrently;
import dev.tally.tck.ManualTimeSource;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The table and the key heap grow without moving anything, and reuse what is deleted. */
class GrowthTest {
  @TempDir
  Path dir;

  private final ManualTimeSource clock = new ManualTimeSource();
  private LocalStore store;

  @AfterEach
  void close() {
    if (store != null) {
      store.close();
    }
  }

  private LocalStore open(LocalOptions options) {
    return store = new LocalStore(options, clock);
  }

  private LocalOptions small() {
    return LocalOptions.parse("file:" + dir + "?slots=64");
  }

  private long fileLength() {
    return store.file().map.getLongVolatile(Layout.H_FILE_LENGTH);
  }

  @Test
  void theTableGrowsBySegmentsAndKeepsEveryKey() {
    open(small());
    int n = 3_000;
    for (int i = 0; i < n; i++) {
      store.put("key:" + i, (long) i, Store.NO_TTL);
    }
    assertThat(store.file().segmentCount()).isGreaterThanOrEqualTo(6);
    for (int i = 0; i < n; i++) {
      assertThat(store.get("key:" + i)).isEqualTo((long) i);
    }
    store.close();
    open(small());
    assertThat(store.keys("key:")).hasSize(n);
    assertThat(store.incr("key:1234", 1, 0, true)).isEqualTo(1235);
  }

  @Test
  void growthRacingWithIncrementsLosesNothing() {
    open(small());
    int threads = 4;
    int keys = 400;
    Concurrently.run(threads, keys, (t, i) -> {
      store.incr("hot", 1, 0, true);
      store.incr("k:" + i, 1, 0, true);
    });
    assertThat(store.get("hot")).isEqualTo((long) threads * keys);
    for (int i = 0; i < keys; i++) {
      assertThat(store.get("k:" + i)).isEqualTo((long) threads);
    }
  }

  /**
   * Mappings are limited to 2 GiB, so a large table is several mappings. Here each mapping is
   * 64 KiB, so a few thousand long keys span dozens of them: the code that finds the mapping of
   * an offset, keeps records from straddling two, and remaps as the file grows, is the code a
   * table over 2 GiB runs.
   */
  @Test
  void aTableLargerThanOneMappingIsManyMappings() {
    open(small().withWindowShift(16));
    int n = 4_000;
    String pad = "x".repeat(150);
    for (int i = 0; i < n; i++) {
      store.incr(pad + i, i, 0, true);
    }
    assertThat(fileLength()).isGreaterThan(40L << 16);
    for (int i = 0; i < n; i += 7) {
      assertThat(store.get(pad + i)).isEqualTo((long) i);
    }
    assertThat(store.keys(pad)).hasSize(n);
    store.close();
    open(small()); // the same file through 1 GiB mappings
    assertThat(store.get(pad + 3999)).isEqualTo(3999L);
  }

  @Test
  void deletedSlotsAndKeySpaceAreReused() {
    open(small());
    int n = 500;
    long lengthAfterFirstRounds = 0;
    for (int round = 0; round < 10; round++) {
      for (int i = 0; i < n; i++) {
        store.incr("round" + round + ":key:" + i, 1, 0, true);
      }
      for (int i = 0; i < n; i++) {
        if (round % 2 == 0) {
          assertThat(store.pop("round" + round + ":key:" + i, true)).isEqualTo(1L);
        } else {
          assertThat(store.delete("round" + round + ":key:" + i)).isTrue();
        }
      }
      if (round == 1) {
        lengthAfterFirstRounds = fileLength();
      }
    }
    assertThat(fileLength()).isEqualTo(lengthAfterFirstRounds);
    assertThat(store.keys("")).isEmpty();
  }

  @Test
  void expiredCountersAreSweptAndTheirSpaceReused() {
    open(small());
    int n = 500;
    for (int i = 0; i < n; i++) {
      store.put("day1:" + i, 1L, Duration.ofDays(1).toNanos());
    }
    long length = fileLength();
    clock.advance(Duration.ofDays(2));
    store.sweepAll(); // (the store's own sweeper may have taken some already)
    assertThat(store.keys("")).isEmpty();
    assertThat(store.sweepAll()).isZero();
    for (int i = 0; i < n; i++) {
      store.put("day3:" + i, 1L, Duration.ofDays(1).toNanos());
    }
    assertThat(fileLength()).isEqualTo(length);
    assertThat(store.keys("")).hasSize(n).allMatch(k -> k.startsWith("day3:"));
  }

  @Test
  void keysOfEveryLengthAndSizeClassRoundTrip() {
    open(small());
    for (int len = 1; len <= 1024; len += 37) {
      String k = "k".repeat(len);
      store.put(k, (long) len, Store.NO_TTL);
    }
    for (int len = 1; len <= 1024; len += 37) {
      assertThat(store.get("k".repeat(len))).isEqualTo((long) len);
    }
    assertThat(store.keys("kkkk")).hasSize(27);
  }
}
