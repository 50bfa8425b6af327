package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spi.Store;
import dev.tally.tck.ManualTimeSource;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each sync mode forces writes to the device when it says it does, locked or lock-free. */
class DurabilityTest {
  @TempDir
  Path dir;

  private LocalStore store;

  @AfterEach
  void close() {
    if (store != null) {
      store.close();
    }
  }

  private LocalStore open(String sync) {
    return store = new LocalStore(LocalOptions.parse("file:" + dir + "?sync=" + sync), new ManualTimeSource());
  }

  private long forces() {
    return store.file().map.forces.get();
  }

  private boolean forcedWithin(long millis, long before) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < deadline) {
      if (forces() > before) {
        return true;
      }
      Thread.sleep(5);
    }
    return false;
  }

  @Test
  void periodicFlushesLockedWritesSoonAfter() throws InterruptedException {
    open("periodic");
    store.put("k", 1L, Store.NO_TTL); // a locked write, no lock-free one
    Thread.sleep(3 * Maintenance.FLUSH_MILLIS);
    long before = forces();
    store.put("k", 2L, Store.NO_TTL);
    assertThat(forcedWithin(10 * Maintenance.FLUSH_MILLIS, before)).isTrue();
  }

  @Test
  void periodicFlushesLockFreeIncrementsSoonAfter() throws InterruptedException {
    open("periodic");
    store.incr("k", 1, 0, true);
    Thread.sleep(3 * Maintenance.FLUSH_MILLIS);
    long before = forces();
    store.incr("k", 1, 0, true); // the lock-free path
    assertThat(forcedWithin(10 * Maintenance.FLUSH_MILLIS, before)).isTrue();
  }

  @Test
  void periodicDoesNotFlushWhenNothingChanged() throws InterruptedException {
    open("periodic");
    store.put("k", 1L, Store.NO_TTL);
    Thread.sleep(3 * Maintenance.FLUSH_MILLIS);
    long before = forces();
    Thread.sleep(3 * Maintenance.FLUSH_MILLIS);
    assertThat(forces()).isEqualTo(before);
  }

  @Test
  void alwaysFlushesBeforeEachWriteReturns() {
    open("always");
    long before = forces();
    store.put("k", 1L, Store.NO_TTL);
    long afterPut = forces();
    assertThat(afterPut).isGreaterThan(before);
    store.incr("k", 1, 0, true);
    assertThat(forces()).isGreaterThan(afterPut);
    long afterIncr = forces();
    store.transact(java.util.List.of(new dev.tally.spi.TxOp.Incr("a", 1, 0, true),
        new dev.tally.spi.TxOp.Incr("b", 1, 0, true)));
    assertThat(forces()).isGreaterThan(afterIncr);
  }

  @Test
  void noneLeavesFlushingToTheKernel() throws InterruptedException {
    open("none");
    long before = forces();
    store.put("k", 1L, Store.NO_TTL);
    store.incr("k", 1, 0, true);
    Thread.sleep(3 * Maintenance.FLUSH_MILLIS);
    assertThat(forces()).isEqualTo(before);
  }
}
