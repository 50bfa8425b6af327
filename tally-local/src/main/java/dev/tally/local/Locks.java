package dev.tally.local;

import static dev.tally.local.Layout.EMPTY;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.RESERVED;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_WAITER;
import static dev.tally.local.Layout.STATE_BITS;
import static dev.tally.local.Layout.TOMBSTONE;

import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.locks.LockSupport;

/**
 * The locks of the file store: one word per slot, per insert stripe and for growth, shared by
 * every process that maps the file.
 *
 * <h2>Why not a JDK lock, a file lock or a plain spinlock</h2>
 *
 * JDK locks live in one process's heap. {@code FileChannel.lock} is released by the kernel when
 * its holder dies, which is what we want, but costs two system calls: measured on the two-core
 * development machine, 3.3 to 5 µs for a lock and release, against 31 to 42 ns for a
 * compare-and-swap and a release store on a mapped word, a hundredfold; and it gives no say over
 * fairness. A plain
 * spinlock on a mapped word is fast but, when its holder is killed, spins forever: the design
 * notes measured survivors stuck in 7 of 15 {@code kill -9} trials. So a lock word here names its
 * holder ({@link ProcessOwner}: pid and start token), and a waiter that has waited a while asks
 * whether the holder is still alive; if not, it recovers the holder's work from its journal
 * entry ({@link Journal#recoverOwner}) and carries on. Detection costs one read of
 * {@code /proc/<pid>/stat} every millisecond of waiting, so a dead holder is recovered within
 * about a millisecond of being noticed, and never waited on for longer.
 *
 * <h2>Waiting: short, bounded, fair</h2>
 *
 * A waiter spins briefly (locked sections are a few hundred nanoseconds), then yields, then parks
 * with a growing pause of at most a millisecond, so waiters on a busy machine give their core to
 * the holder instead of burning it. Parking alone is unfair: a neighbour that unlocks and
 * relocks in a loop wins every race against a waiter that wakes up a little later. So a waiter
 * that has waited more than {@value #RESERVE_AFTER_NANOS} ns writes itself into the slot's
 * {@code waiter} word, and nobody else may take the lock while that reservation stands: the
 * longest waiter goes next. The reserver refreshes a millisecond timestamp in the word as it
 * waits; a reservation not refreshed for {@value #STALE_MILLIS} ms (its owner died, or is
 * descheduled) is ignored, so a reservation can delay others but never block them.
 */
final class Locks {
  static final long RESERVE_AFTER_NANOS = 20_000;
  static final long FIRST_CHECK_NANOS = 50_000;
  static final long CHECK_EVERY_NANOS = 1_000_000;
  static final int STALE_MILLIS = 10;
  private static final int MILLIS_BITS = 20;
  private static final int MILLIS_MASK = (1 << MILLIS_BITS) - 1;

  /**
   * The longest any waiter in this process waited on a holder that had died: from the last time
   * it found the holder alive (or, if never, from the start of its wait) until the dead holder's
   * lock was recovered. Time spent behind live holders is not counted. Liveness verdicts are
   * cached for a millisecond ({@link ProcessOwner}), so this is exact to about a millisecond.
   */
  static final LongAccumulator LONGEST_DEAD_OWNER_WAIT = new LongAccumulator(Math::max, 0);

  private final FileMap map;
  private final ProcessOwner owner;
  private Journal journal;

  Locks(FileMap map, ProcessOwner owner) {
    this.map = map;
    this.owner = owner;
  }

  void journal(Journal journal) {
    this.journal = journal;
  }

  // ---------------------------------------------------------------- slot locks

  /**
   * Acquires the lock of {@code slot} for {@code entry}, waiting while its holder lives. The
   * slot is recorded as the entry's pending lock first, so that if this process dies holding
   * it, whoever recovers the entry finds and releases it.
   */
  void lockSlot(long slot, Journal.Entry entry) {
    entry.pending(slot);
    long me = owner.word;
    int tag = (entry.index + 1) << MILLIS_BITS;
    long started = 0;
    long nextCheck = 0;
    long nextRefresh = 0;
    long aliveAt = 0;
    for (int spins = 0; ; spins++) {
      long holder = map.getLongVolatile(slot + S_LOCK);
      int waiter = map.getIntVolatile(slot + S_WAITER);
      boolean mine = waiter != 0 && (waiter & ~MILLIS_MASK) == tag;
      if (holder == 0 && (waiter == 0 || mine || stale(waiter))) {
        if (map.casLong(slot + S_LOCK, 0, me)) {
          if (waiter != 0) {
            map.casInt(slot + S_WAITER, waiter, 0);
          }
          return;
        }
        continue;
      }
      long now = System.nanoTime();
      if (started == 0) {
        started = now;
        nextCheck = now + FIRST_CHECK_NANOS;
      }
      if (holder != 0 && now - nextCheck >= 0) {
        nextCheck = now + CHECK_EVERY_NANOS;
        if (owner.isDead(holder)) {
          recoverSlotHolder(slot, holder);
          LONGEST_DEAD_OWNER_WAIT.accumulate(System.nanoTime() - (aliveAt != 0 ? aliveAt : started));
          continue;
        }
        aliveAt = now;
      }
      if (now - started > RESERVE_AFTER_NANOS) {
        if (mine) {
          if (now - nextRefresh >= 0) {
            map.casInt(slot + S_WAITER, waiter, tag | millis(now));
            nextRefresh = now + 1_000_000;
          }
        } else if (waiter == 0 || stale(waiter)) {
          if (map.casInt(slot + S_WAITER, waiter, tag | millis(now))) {
            mine = true;
            nextRefresh = now + 1_000_000;
          }
        }
      }
      backoff(spins, mine);
    }
  }

  /**
   * Takes the lock of {@code slot} if it is free and nobody is next in line; never waits. For
   * work that can go elsewhere: claiming a free slot, sweeping.
   */
  boolean tryLockSlot(long slot, Journal.Entry entry) {
    if (map.getLongVolatile(slot + S_LOCK) != 0) {
      return false;
    }
    int waiter = map.getIntVolatile(slot + S_WAITER);
    if (waiter != 0 && !stale(waiter)) {
      return false;
    }
    entry.pending(slot);
    if (map.casLong(slot + S_LOCK, 0, owner.word)) {
      return true;
    }
    entry.pending(0);
    return false;
  }

  void unlockSlot(long slot) {
    map.setLongVolatile(slot + S_LOCK, 0);
  }

  /** Waits until {@code slot} is not locked, recovering a dead holder; for lock-free readers. */
  void awaitUnlocked(long slot) {
    long started = System.nanoTime();
    long nextCheck = started + FIRST_CHECK_NANOS;
    long aliveAt = 0;
    for (int spins = 0; ; spins++) {
      long holder = map.getLongVolatile(slot + S_LOCK);
      if (holder == 0) {
        return;
      }
      long now = System.nanoTime();
      if (now - nextCheck >= 0) {
        nextCheck = now + CHECK_EVERY_NANOS;
        if (owner.isDead(holder)) {
          recoverSlotHolder(slot, holder);
          LONGEST_DEAD_OWNER_WAIT.accumulate(System.nanoTime() - (aliveAt != 0 ? aliveAt : started));
          return;
        }
        aliveAt = now;
      }
      backoff(spins, false);
    }
  }

  /**
   * The holder of {@code slot} is dead: undo or finish its journaled work, then, if the slot is
   * somehow still its (a lock its journal does not mention), take it over and make it
   * consistent. The take-over is idempotent, so a recoverer that dies half-way is recovered in
   * turn.
   */
  private void recoverSlotHolder(long slot, long dead) {
    journal.recoverOwner(dead);
    if (map.getLongVolatile(slot + S_LOCK) == dead && map.casLong(slot + S_LOCK, dead, owner.word)) {
      repairUnjournaled(slot);
      unlockSlot(slot);
    }
  }

  /**
   * Makes a slot whose locker died before journaling it (or after finishing) consistent. Nothing
   * was modified before the image was written, so at most: the seal is undone, and a slot that
   * was about to be claimed becomes a tombstone (never empty again, so probe chains that went
   * past it stay intact).
   */
  void repairUnjournaled(long slot) {
    long meta = map.getLongVolatile(slot + S_META);
    int state = (int) meta & STATE_BITS;
    if (state == EMPTY || state == RESERVED) {
      Table.writeMeta(map, slot, TOMBSTONE | ((int) meta & ~STATE_BITS));
    } else if (state == LIVE && map.getLongVolatile(slot + S_RAW) == SEALED) {
      long held = map.getLong(slot + S_HELD);
      long mask = map.getLong(slot + S_MASK);
      if ((held ^ mask) != SEALED) {
        map.casLong(slot + S_RAW, SEALED, held ^ mask);
      }
    }
  }

  // ---------------------------------------------------------------- stripe and growth locks

  /**
   * Acquires a lock that guards no data of its own (an insert stripe, the growth lock): a dead
   * holder's lock is simply taken back. Holders never wait for anything while holding one.
   */
  void lockWord(long at) {
    long me = owner.word;
    long started = 0;
    long nextCheck = 0;
    long aliveAt = 0;
    for (int spins = 0; ; spins++) {
      long holder = map.getLongVolatile(at);
      if (holder == 0) {
        if (map.casLong(at, 0, me)) {
          return;
        }
        continue;
      }
      long now = System.nanoTime();
      if (started == 0) {
        started = now;
        nextCheck = now + FIRST_CHECK_NANOS;
      }
      if (now - nextCheck >= 0) {
        nextCheck = now + CHECK_EVERY_NANOS;
        if (owner.isDead(holder)) {
          map.casLong(at, holder, 0);
          LONGEST_DEAD_OWNER_WAIT.accumulate(System.nanoTime() - (aliveAt != 0 ? aliveAt : started));
          continue;
        }
        aliveAt = now;
      }
      backoff(spins, false);
    }
  }

  void unlockWord(long at) {
    map.setLongVolatile(at, 0);
  }

  // ---------------------------------------------------------------- helpers

  private static int millis(long nanos) {
    return (int) (nanos / 1_000_000) & MILLIS_MASK;
  }

  private static boolean stale(int waiter) {
    int age = (millis(System.nanoTime()) - (waiter & MILLIS_MASK)) & MILLIS_MASK;
    return age > STALE_MILLIS;
  }

  /**
   * Spin, then yield, then park. The next in line parks only briefly, so it notices the release
   * within microseconds; the others back off to at most a millisecond.
   */
  static void backoff(int spins, boolean nextInLine) {
    if (spins < 64) {
      Thread.onSpinWait();
    } else if (spins < 80) {
      Thread.yield();
    } else if (nextInLine) {
      LockSupport.parkNanos(5_000);
    } else {
      int step = Math.min(8, (spins - 80) >> 3);
      LockSupport.parkNanos(Math.min(1_000_000L, 10_000L << step));
    }
  }
}
