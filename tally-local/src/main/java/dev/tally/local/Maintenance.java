package dev.tally.local;

import dev.tally.TimeSource;
import java.util.concurrent.locks.LockSupport;

/**
 * The store's daemon thread. Every {@value #FLUSH_MILLIS} ms, with {@code sync=periodic}, it
 * forces what this process wrote to the device (Redis' {@code appendfsync everysec} class: a
 * crash of the machine loses at most about that much). Every second it recovers journal entries
 * of processes that died, and sweeps part of the table for expired counters, rate limiters and
 * operation ids, turning them into reusable tombstones (the whole table at least once a minute,
 * see {@link #sweepBudget}); the sweep runs on the store's {@link TimeSource}.
 */
final class Maintenance implements Runnable {
  static final long FLUSH_MILLIS = 100;
  private static final int TICKS_PER_SWEEP = 10;
  private static final long SWEEP_SLOTS = 65_536;
  private static final long SWEEP_CYCLE_SECONDS = 60;

  private final LocalStore store;
  private final StoreFile file;
  private final LocalOptions.Sync sync;
  private final Thread thread;
  private final long[] cursor = {0};
  private volatile boolean stopped;

  Maintenance(LocalStore store, StoreFile file, TimeSource time, LocalOptions.Sync sync) {
    this.store = store;
    this.file = file;
    this.sync = sync;
    this.thread = new Thread(this, "tally-file-store " + file.path().getFileName());
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  void stop() {
    stopped = true;
    LockSupport.unpark(thread);
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Slots to visit this second: {@value #SWEEP_SLOTS}, or a {@value #SWEEP_CYCLE_SECONDS}th of the
   * table if that is more, so that expired keys (operation ids above all, which expire at the rate
   * they are recorded) are reclaimed within about a minute however large the table has grown.
   */
  static long sweepBudget(StoreFile file) {
    long slots = file.segment0Slots * ((1L << file.segmentCount()) - 1);
    return Math.max(SWEEP_SLOTS, slots / SWEEP_CYCLE_SECONDS);
  }

  @Override
  public void run() {
    for (long tick = 1; !stopped; tick++) {
      LockSupport.parkNanos(FLUSH_MILLIS * 1_000_000);
      if (stopped) {
        return;
      }
      try {
        if (sync == LocalOptions.Sync.PERIODIC && file.dirty) {
          file.dirty = false;
          file.map.forceAll();
        }
        if (tick % TICKS_PER_SWEEP == 0) {
          file.recoverDeadLeftovers();
          store.sweep(cursor, sweepBudget(file));
        }
      } catch (RuntimeException e) {
        if (!stopped) {
          System.getLogger("dev.tally.local").log(System.Logger.Level.WARNING,
              "file store maintenance failed; will retry", e);
        }
      }
    }
  }
}
