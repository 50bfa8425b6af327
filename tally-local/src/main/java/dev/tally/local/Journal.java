package dev.tally.local;

import static dev.tally.local.Layout.COMMITTED;
import static dev.tally.local.Layout.EMPTY;
import static dev.tally.local.Layout.ENTRIES;
import static dev.tally.local.Layout.ENTRY_IMAGES;
import static dev.tally.local.Layout.ENTRY_SIZE;
import static dev.tally.local.Layout.E_CLAIM;
import static dev.tally.local.Layout.E_COUNT;
import static dev.tally.local.Layout.E_IMAGES;
import static dev.tally.local.Layout.E_OWNER;
import static dev.tally.local.Layout.E_PENDING;
import static dev.tally.local.Layout.E_STATE;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.OPEN;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.STATE_BITS;
import static dev.tally.local.Layout.S_EXPIRY;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_KEY_HASH;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;
import static dev.tally.local.Layout.TOMBSTONE;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Undo journals: how a locked operation stays all-or-nothing when its process dies half-way.
 *
 * <p>A thread borrows one of the file's {@value Layout#ENTRIES} journal entries for each locked
 * operation (a single-key write or a whole transaction) by writing its owner word into the
 * entry. Then, for every slot it locks, in this order:
 * <ol>
 *   <li>it records the slot as {@code pending}, then takes the slot's lock;
 *   <li>it copies the slot's 64 bytes into the entry as an image and bumps the image count;
 *   <li>it seals the slot: writes the value to {@code held}, then compare-and-swaps {@code raw}
 *       to {@link Layout#SEALED} (see {@link Table} for why), and only then changes fields.
 * </ol>
 * When every change is written it marks the entry {@code COMMITTED}, unseals the slots, drops the
 * images ({@link Entry#retire}), unlocks the slots and clears the entry. Whoever finds a lock whose owner died runs {@link #recoverOwner}:
 * for each entry of the dead owner, a committed one is rolled forward (each slot it still holds
 * is unsealed from {@code held}) and any other rolled back (each slot it still holds and had
 * sealed gets its image back). A slot that was never sealed was never changed. So a transaction
 * is applied entirely or not at all, whatever instant its process died.
 *
 * <p>Recovery is itself crash-safe: the recoverer first claims the entry by writing its own
 * owner word into {@code claim}, and every step is idempotent (it re-checks that the slot is
 * still locked by the dead owner and still sealed), so if it dies too, the next recoverer takes
 * the claim over from the dead claimer and repeats the work.
 */
final class Journal {
  private final FileMap map;
  private final Locks locks;
  private final ProcessOwner owner;
  private final long base;
  private final ThreadLocal<int[]> hint = ThreadLocal.withInitial(
      () -> new int[] {ThreadLocalRandom.current().nextInt(ENTRIES)});

  Journal(FileMap map, Locks locks, ProcessOwner owner, long base) {
    this.map = map;
    this.locks = locks;
    this.owner = owner;
    this.base = base;
  }

  /** A borrowed journal entry; one thread's, for one operation. */
  final class Entry {
    final int index;
    final long at;
    int images;

    private Entry(int index) {
      this.index = index;
      this.at = base + (long) index * ENTRY_SIZE;
    }

    void pending(long slot) {
      map.setLongVolatile(at + E_PENDING, slot);
    }

    boolean full() {
      return images >= ENTRY_IMAGES;
    }

    /** Copies the locked slot into the next image and publishes it; returns the image offset. */
    long image(long slot) {
      long img = at + E_IMAGES + (long) images * SLOT;
      for (int off = 8; off < SLOT; off += 8) {
        map.setLong(img + off, map.getLong(slot + off));
      }
      map.setLong(img, slot); // an image's first word names its slot
      images++;
      map.setIntVolatile(at + E_COUNT, images);
      return img;
    }

    void committed() {
      map.setIntVolatile(at + E_STATE, COMMITTED);
    }

    /**
     * Forgets the images, once every slot holds its final value unsealed and before the slots
     * are unlocked. Why: a lock word names a process, not a thread. Once a slot is unlocked,
     * another thread of this process may lock and seal it for its own operation; if the process
     * then died before this entry was returned, rolling this entry forward would unseal that
     * thread's half-written value, while that thread's own entry rolled back its other slots.
     * With no images, recovery leaves this entry's slots to their current holder's journal (a
     * slot still locked, by a process that died right here, is repaired as unjournaled: it is
     * already unsealed). With {@code sync=always} the caller forces the retired entry before
     * unlocking: otherwise, after a machine crash, the device could still hold the images, and
     * recovery on the next open would roll them forward over a later operation's slots.
     */
    void retire() {
      images = 0;
      map.setIntVolatile(at + E_COUNT, 0);
    }

    /** Writes the entry (header and images) to the device; for sync=always. */
    void force() {
      map.force(at, E_IMAGES + (long) images * SLOT);
    }

    /** Returns the entry to the pool; the operation is over. */
    void release() {
      map.setIntVolatile(at + E_COUNT, 0);
      map.setIntVolatile(at + E_STATE, OPEN);
      map.setLongVolatile(at + E_PENDING, 0);
      images = 0;
      map.setLongVolatile(at + E_OWNER, 0);
    }
  }

  /** Borrows a free entry, waiting (and recovering dead borrowers) if all are taken. */
  Entry borrow() {
    int[] h = hint.get();
    long me = owner.word;
    for (int round = 0; ; round++) {
      for (int n = 0; n < ENTRIES; n++) {
        int i = (h[0] + n) % ENTRIES;
        long at = base + (long) i * ENTRY_SIZE;
        if (map.getLongVolatile(at + E_OWNER) == 0 && map.getLongVolatile(at + E_CLAIM) == 0
            && map.casLong(at + E_OWNER, 0, me)) {
          h[0] = i;
          // A state left COMMITTED by damage would have recovery roll this entry forward.
          map.setIntVolatile(at + E_STATE, OPEN);
          map.setIntVolatile(at + E_COUNT, 0);
          return new Entry(i);
        }
      }
      if (round % 16 == 15) {
        recoverDead();
      }
      Locks.backoff(round + 64, false);
    }
  }

  /** Recovers every entry whose owner has died; run now and then by the maintenance thread. */
  void recoverDead() {
    for (int i = 0; i < ENTRIES; i++) {
      long o = map.getLongVolatile(base + (long) i * ENTRY_SIZE + E_OWNER);
      if (o != 0 && owner.isDead(o)) {
        recoverOwner(o);
      }
    }
  }

  /** Rolls back or forward every entry of {@code dead}, releasing the slots it locked. */
  void recoverOwner(long dead) {
    for (int i = 0; i < ENTRIES; i++) {
      long at = base + (long) i * ENTRY_SIZE;
      if (map.getLongVolatile(at + E_OWNER) == dead) {
        recoverEntry(at, dead);
      }
    }
  }

  private void recoverEntry(long at, long dead) {
    long me = owner.word;
    for (int spins = 0; ; spins++) {
      if (map.getLongVolatile(at + E_OWNER) != dead) {
        return; // recovered meanwhile
      }
      long claim = map.getLongVolatile(at + E_CLAIM);
      if (claim == 0 || (claim != me && owner.isDead(claim))) {
        if (map.casLong(at + E_CLAIM, claim, me)) {
          break;
        }
      } else {
        Locks.backoff(spins, false); // another live recoverer is at it; it is quick
      }
    }
    if (map.getLongVolatile(at + E_OWNER) == dead) {
      undoOrFinish(at, dead);
      map.setIntVolatile(at + E_COUNT, 0);
      map.setIntVolatile(at + E_STATE, OPEN);
      map.setLongVolatile(at + E_PENDING, 0);
      map.setLongVolatile(at + E_CLAIM, 0);
      map.casLong(at + E_OWNER, dead, 0);
    } else {
      map.casLong(at + E_CLAIM, me, 0);
    }
  }

  /** The recovery proper, under the claim; {@code holder} is the owner word its locks carry. */
  private void undoOrFinish(long at, long holder) {
    boolean committed = map.getIntVolatile(at + E_STATE) == COMMITTED;
    int count = Math.min(map.getIntVolatile(at + E_COUNT), ENTRY_IMAGES);
    for (int j = count - 1; j >= 0; j--) {
      long img = at + E_IMAGES + (long) j * SLOT;
      long slot = map.getLong(img);
      if (!validSlot(slot) || map.getLongVolatile(slot + S_LOCK) != holder) {
        continue;
      }
      if (committed) {
        finish(slot);
      } else {
        restore(slot, img);
      }
      map.casLong(slot + S_LOCK, holder, 0);
    }
    long pending = map.getLongVolatile(at + E_PENDING);
    if (validSlot(pending) && map.getLongVolatile(pending + S_LOCK) == holder
        && !imagedElsewhere(pending, holder, at)) {
      locks.repairUnjournaled(pending);
      map.casLong(pending + S_LOCK, holder, 0);
    }
  }

  /**
   * Whether another entry of {@code holder} has an image of {@code slot}. A lock word names a
   * process, not a thread: the slot one dead thread was waiting for (its pending slot) may be
   * held, mid-transaction, by another thread of the same process. That thread's entry alone may
   * undo it; "repairing" it as an unjournaled lock would unseal a half-written value.
   */
  private boolean imagedElsewhere(long slot, long holder, long except) {
    for (int i = 0; i < ENTRIES; i++) {
      long at = base + (long) i * ENTRY_SIZE;
      if (at == except || map.getLongVolatile(at + E_OWNER) != holder) {
        continue;
      }
      int count = Math.min(map.getIntVolatile(at + E_COUNT), ENTRY_IMAGES);
      for (int j = 0; j < count; j++) {
        if (map.getLong(at + E_IMAGES + (long) j * SLOT) == slot) {
          return true;
        }
      }
    }
    return false;
  }

  private boolean validSlot(long slot) {
    if (slot < Layout.REGIONS_AT || (slot & (SLOT - 1)) != 0) {
      return false;
    }
    if (slot + SLOT > map.mapped()) { // in a segment another process added: map it
      map.mapTo(map.getLongVolatile(Layout.H_FILE_LENGTH));
    }
    return slot + SLOT <= map.mapped();
  }

  /** Roll forward: every field was written before COMMITTED, so only the seal remains. */
  private void finish(long slot) {
    long meta = map.getLongVolatile(slot + S_META);
    if (((int) meta & STATE_BITS) == LIVE && map.getLongVolatile(slot + S_RAW) == SEALED) {
      long held = map.getLong(slot + S_HELD);
      long mask = map.getLong(slot + S_MASK);
      map.casLong(slot + S_RAW, SEALED, held ^ mask);
    }
  }

  /**
   * Roll back: if the slot was sealed, its fields may have changed, so put the image back and
   * unseal it (a counter with a new mask). An image of an empty slot comes back as a tombstone, never as empty: while the
   * slot was claimed, another key may have been inserted past it in the same probe chain.
   */
  private void restore(long slot, long img) {
    if (map.getLongVolatile(slot + S_RAW) != SEALED) {
      int state = (int) map.getLongVolatile(slot + S_META) & STATE_BITS;
      if (state == EMPTY) {
        Table.writeMeta(map, slot, TOMBSTONE);
      }
      return; // never sealed, so never changed
    }
    long held = map.getLong(img + S_HELD);
    long mask = map.getLong(img + S_MASK);
    int flags = (int) map.getLong(img + S_META);
    if ((flags & STATE_BITS) == EMPTY) {
      flags = TOMBSTONE;
    }
    if ((flags & STATE_BITS) == LIVE && (flags & Layout.RECORD) == 0) {
      // A counter rolled back is a new incarnation: a reader may have seen the expiry the dead
      // holder wrote, with the old mask, and must not take it for the expiry put back (Table).
      mask = Table.newMask(held);
    }
    map.setLong(slot + S_HELD, held);
    map.setLong(slot + S_MASK, mask);
    map.setLong(slot + S_EXPIRY, map.getLong(img + S_EXPIRY));
    map.setLong(slot + S_KEY_HASH, map.getLong(img + S_KEY_HASH));
    map.setIntVolatile(slot + S_KEY_REF, map.getInt(img + S_KEY_REF));
    Table.writeMeta(map, slot, flags);
    if ((flags & STATE_BITS) == LIVE && (held ^ mask) != SEALED) {
      map.casLong(slot + S_RAW, SEALED, held ^ mask);
    }
  }

  /**
   * Recovers every entry as if its owner were dead, and frees every insert stripe. Only for the
   * first process to open the file, when no other process has it open.
   */
  void recoverAllExclusively(long stripesAt, int stripes) {
    for (int i = 0; i < ENTRIES; i++) {
      long at = base + (long) i * ENTRY_SIZE;
      long o = map.getLongVolatile(at + E_OWNER);
      if (o != 0) {
        undoOrFinish(at, o);
      }
      map.setIntVolatile(at + E_COUNT, 0);
      map.setIntVolatile(at + E_STATE, OPEN);
      map.setLongVolatile(at + E_PENDING, 0);
      map.setLongVolatile(at + E_CLAIM, 0);
      map.setLongVolatile(at + E_OWNER, 0);
    }
    for (int i = 0; i < stripes; i++) {
      map.setLongVolatile(stripesAt + i * 8L, 0);
    }
  }
}
