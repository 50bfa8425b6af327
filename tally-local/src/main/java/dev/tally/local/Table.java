package dev.tally.local;

import static dev.tally.local.Layout.EMPTY;
import static dev.tally.local.Layout.FLOATING;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.PAGE;
import static dev.tally.local.Layout.RECORD;
import static dev.tally.local.Layout.RESERVED;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SLOTS_PER_PAGE;
import static dev.tally.local.Layout.STATE_BITS;
import static dev.tally.local.Layout.STRIPES_AT;
import static dev.tally.local.Layout.S_EXPIRY;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_KEY_HASH;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;
import static dev.tally.local.Layout.TOMBSTONE;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The hash table of counters in the mapped file, and the protocol that keeps it exact when
 * processes share it, race on it and die in the middle of it.
 *
 * <h2>Shape</h2>
 *
 * Slots live in segments of doubling size ({@link StoreFile}). A segment is made of 4 KiB pages
 * of 64 cells: cell 0 holds one fingerprint byte per slot (a set high bit and 7 bits of the key's
 * hash; 0 for a free slot), cells 1 to 63 are slots. A key hashes to one page in each segment,
 * and is looked for segment after segment: one read of the page's fingerprint line, compared
 * eight bytes at a time, names the few slots worth a look (as in Abseil's Swiss tables), so a
 * miss costs one cache line per segment however full the page is. A slot is {@code EMPTY}
 * (never used), {@code LIVE}, {@code TOMBSTONE} (deleted; reusable) or {@code RESERVED}
 * (claimed by an insert that has not finished). A new key takes a free slot of its page in the
 * oldest segment with room; when its page is full in every segment, the table grows by a
 * segment twice the size of the last, and nothing moves.
 *
 * <p>Fingerprints are hints that never hide a key: a claimer writes the fingerprint before the
 * slot becomes {@code RESERVED}, and a remover clears it only after its removal is committed
 * (never to be rolled back), both under the slot's lock. A stale fingerprint on a free slot
 * costs a wasted look, nothing more; the first open after a crash of the machine rebuilds them.
 *
 * <p>A key is put in a slot only by a thread holding the key's insert stripe (one of 4096 locks
 * chosen by hash) that has just searched every segment and not found it, so a key is in at most
 * one {@code LIVE} or {@code RESERVED} slot at any time. Stripe holders never wait for anything
 * else (they skip locked slots rather than wait for them), so stripes cannot deadlock with slot
 * locks; transactions lock their slots in key order.
 *
 * <h2>The value word</h2>
 *
 * A live slot keeps its value in {@code raw} as {@code value ^ mask}, where {@code mask} is a
 * random 64-bit number drawn each time the slot gets a new incarnation (a key put in it, or its
 * kind changed, or an expired key restarted). {@code incr} on a live, unexpired integer key is
 * lock-free: read {@code expiry}, read {@code raw}, read {@code mask}; if {@code raw} is not
 * {@link Layout#SEALED} and the mask is the one the lookup validated, compare-and-swap
 * {@code raw} from {@code r} to {@code (v + delta) ^ mask}. Everything else takes the slot's lock
 * and <em>seals</em> the slot: it writes the value to {@code held}, then compare-and-swaps
 * {@code raw} from its current {@code r} to {@code SEALED}, and only then changes anything. At
 * the end it writes the new {@code raw} (unsealing) and releases the lock.
 *
 * <h2>Why a lock-free increment is never lost, nor applied to the wrong counter</h2>
 *
 * An increment's compare-and-swap succeeds only if {@code raw} still holds the {@code r} it
 * read. A locked writer (pop, delete, put, a transaction) changes {@code raw} to {@code SEALED}
 * with a compare-and-swap before it reads the value it acts on, so either the increment's CAS
 * comes first and the writer's seal sees its result (a pop returns it), or the seal comes first
 * and the increment's CAS fails; it then goes the locked way and waits its turn. This is
 * {@code MemoryStore}'s sealing, on a mapped word.
 *
 * <p>What sealing alone does not cover is ABA: the increment reads {@code r}, stalls; the slot
 * is sealed, its key deleted, the slot reused for another key whose value happens to encode to
 * the same {@code r}; the stalled CAS then succeeds and adds to the wrong counter. The mask
 * closes this: every reuse draws a fresh random mask, so the new incarnation's {@code raw}
 * equals a stale {@code r} with probability 2<sup>-64</sup> (the odds UUIDs rely on). Within
 * one incarnation the key and kind are the same, so a stale CAS that succeeds after a locked
 * write that left the value as it was is simply ordered after that write, which is a correct
 * history. The increment reads {@code mask} <em>after</em> {@code raw}: a writer publishes a new
 * mask before the {@code raw} that uses it, so if the mask read is the validated one, {@code r}
 * was encoded with it, and the decoded value is right. Reading {@code expiry} before {@code raw}
 * likewise pairs the expiry with the value: a successful CAS proves no locked write intervened.
 *
 * <p>An incarnation's expiry never changes: a locked write that changes a counter's expiry
 * ({@code touch}, a {@code put} with a ttl) gives the slot a new mask, and so does a rollback
 * ({@link Journal}), which puts back an expiry that a reader may have seen replaced. So the
 * expiry read with a validated mask is the expiry of every value word encoded with that mask,
 * and a process can keep both ({@link Ref}). That gives the increment a shorter way, tried
 * first: compare-and-swap {@code raw} straight from the word this process last saw there,
 * {@code r}, to {@code (v + delta) ^ mask}, with {@code v = r ^ mask} and the kept expiry
 * checked against the clock. If it succeeds, {@code raw} was {@code r}, a word of the kept
 * incarnation (another incarnation's words equal it with probability 2<sup>-64</sup>, as above),
 * so {@code v} was the value and the kept expiry the expiry: the same increment as the long way.
 * If it fails, nothing changed, and the long way runs on the cache line the attempt fetched. On
 * one hot key shared by processes, this makes an increment one exclusive fetch of the line where
 * the long way took a shared fetch (its reads) and then an exclusive one (its compare-and-swap).
 *
 * <p>A successful CAS is thus a correct increment of the right counter, and a failed one
 * changes nothing: no increment is lost, none lands twice. Lock-free reads ({@code get},
 * {@code ttl}) use the same reads without the CAS, and wait on the lock when they see
 * {@code SEALED}, so they never see a transaction half-applied: its slots stay sealed until
 * every one of them holds its new value.
 *
 * <h2>Crashes</h2>
 *
 * Locked changes are undo-journaled ({@link Journal}); dead lock holders are found and
 * recovered by whoever waits on them ({@link Locks}). {@code held} doubles as the value of a
 * sealed slot in the file, so a slot written to disk mid-operation still has its value.
 * Fields that change only under the lock (mask, expiry, key hash, key ref, state and kind) are
 * covered by a checksum in {@code meta}, verified on the first open after a crash of the
 * machine ({@link StoreFile}), and by each process before it first trusts the slot
 * ({@link #audit}).
 *
 * <h2>Damage</h2>
 *
 * A file can be damaged while no process has it open (a flipped bit, a bad block, a stray
 * write). Each process therefore checks every slot of a page before it first reads the page
 * ({@link SlotAudit}: checksum, fingerprint, key record, limiter record) and remembers the
 * slots it found sound in a bitmap of its own, one bit per slot, so the check costs one load per
 * page visited once the page is known. A slot that fails is a {@link dev.tally.StoreException}
 * naming its offset, for every key whose lookup passes that page: never read as another key or
 * value, nor taken for a missing key. A slot locked or changing while it is checked is left
 * unmarked and checked on a later visit; its locker checked it before locking it.
 *
 * <h2>Rate limiters' slots</h2>
 *
 * A slot flagged {@link Layout#RECORD} holds a rate limiter: {@code held} is the reference of
 * its state record in the key heap, and {@code mask} is {@code held ^ SEALED}. So the value word
 * every unlocked slot keeps, {@code held ^ mask}, is {@code SEALED} for good: lock-free
 * increments and reads fall through to the locked path, which refuses counter operations on a
 * limiter's key ({@link Op#lockCounter}); every path that unseals a slot (commit, roll-forward,
 * roll-back, repair, recovery on open) computes {@code held ^ mask} and leaves it sealed, with no
 * case of its own; and the slot checksum, which covers {@code mask}, covers the reference too.
 *
 * <p>An update never writes a record in place. The locker runs the state machine on a copy,
 * writes the result into a freshly allocated record, and points the slot at it; the slot's
 * journal image holds the old reference, so a process killed at any instant leaves the slot on
 * the old record (rolled back) or the new one (committed), and at worst leaks one record. The
 * old record is freed after the commit, when no rollback can bring its reference back.
 */
final class Table {
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /** Set by tests only: runs while an operation holds all its slot locks, before it writes. */
  static volatile Runnable whileLockedHook;
  /** Set by tests only: runs inside a transaction after its first slot is written. */
  static volatile Runnable midTransactionHook;
  /** Set by tests only: runs when a rate limiter's new record is in its slot, not yet committed. */
  static volatile Runnable uncommittedRecordHook;
  /** Set by tests only: runs once an operation has unlocked its slots, before its entry is returned. */
  static volatile Runnable unlockedHook;

  final StoreFile file;
  final FileMap map;
  final Locks locks;
  final KeyHeap heap;

  Table(StoreFile file) {
    this.file = file;
    this.map = file.map;
    this.locks = file.locks;
    this.heap = file.heap;
  }

  static long longAt(byte[] b, int i) {
    return (long) LONG_LE.get(b, i);
  }

  // ---------------------------------------------------------------- slot fields

  static int state(long meta) {
    return (int) meta & STATE_BITS;
  }

  static boolean floating(long meta) {
    return (meta & FLOATING) != 0;
  }

  /** Whether a slot with this meta holds a rate limiter's state (if it is live). */
  static boolean record(long meta) {
    return (meta & RECORD) != 0;
  }

  /** Where the fingerprint of {@code slot} is kept: byte {@code cell} of its page. */
  static long fingerprintAt(long slot) {
    return (slot & -PAGE) + ((slot & (PAGE - 1)) >>> 6);
  }

  /** Writes a slot's flags and the checksum of its locked fields, as one atomic word. */
  static void writeMeta(FileMap map, long slot, int flags) {
    int check = Hashing.slot(map.getLong(slot + S_MASK), map.getLong(slot + S_EXPIRY),
        map.getLong(slot + S_KEY_HASH), map.getInt(slot + S_KEY_REF), flags);
    map.setLongVolatile(slot + S_META, (flags & 0xFFFF_FFFFL) | ((long) check << 32));
  }

  static boolean checksumOk(FileMap map, long slot) {
    return checksumOk(map, slot, map.getLongVolatile(slot + S_META));
  }

  static boolean checksumOk(FileMap map, long slot, long meta) {
    int check = Hashing.slot(map.getLong(slot + S_MASK), map.getLong(slot + S_EXPIRY),
        map.getLong(slot + S_KEY_HASH), map.getInt(slot + S_KEY_REF), (int) meta);
    return check == (int) (meta >>> 32);
  }

  static boolean expired(long expiresAt, long now) {
    return expiresAt != 0 && now - expiresAt >= 0;
  }

  static long newMask(long bits) {
    for (;;) {
      long m = ThreadLocalRandom.current().nextLong();
      if ((bits ^ m) != SEALED) {
        return m;
      }
    }
  }

  /** The page of {@code key} in segment {@code s}. */
  long page(Key key, int s) {
    long pages = file.segmentSlots(s) / SLOTS_PER_PAGE;
    return file.segmentOffset(s) + ((key.hash >>> 6) & (pages - 1)) * PAGE;
  }

  /** A key's fingerprint byte: a set high bit (so never 0, "free") and 7 bits of its hash. */
  static byte fingerprint(long hash) {
    return (byte) (0x80 | (hash >>> 57));
  }

  /** Whether cell {@code i} of a page is a slot (cell 0 holds the page's fingerprints). */
  static boolean isSlot(long i) {
    return (i & (SLOTS_PER_PAGE - 1)) != 0;
  }

  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;

  /**
   * The slots of {@code page} whose fingerprint is {@code fp}, as a bit set of byte positions
   * within the 8-byte word {@code w} (a SWAR byte compare; it may report a few extra bytes,
   * never miss one).
   */
  static long matches(long w, byte fp) {
    long x = w ^ (ONES * (fp & 0xFF));
    return (x - ONES) & ~x & HIGHS;
  }

  // ---------------------------------------------------------------- lookup

  /**
   * Where a key was found: the slot, and the mask, meta and expiry its identity was validated
   * with (an incarnation's expiry never changes: see "The value word"); and {@link #raw}, the
   * latest value word this process saw there, which a lock-free increment compares against
   * first.
   */
  static final class Ref {
    private final long slot;
    private final long mask;
    private final long meta;
    private final long expiresAt;
    /**
     * A guess, shared without synchronization by the threads of this process: a compare-and-swap
     * against it either succeeds, and then it was the slot's word, or fails and changes nothing.
     */
    long raw;

    Ref(long slot, long mask, long meta, long expiresAt, long raw) {
      this.slot = slot;
      this.mask = mask;
      this.meta = meta;
      this.expiresAt = expiresAt;
      this.raw = raw;
    }

    long slot() {
      return slot;
    }

    long mask() {
      return mask;
    }

    long meta() {
      return meta;
    }

    long expiresAt() {
      return expiresAt;
    }

    boolean floating() {
      return Table.floating(meta);
    }
  }

  /**
   * The {@code LIVE} or {@code RESERVED} slot holding {@code key}, or null. Lock-free: a match
   * is trusted only if the slot's meta and mask are unchanged after the key comparison, i.e.
   * the slot held this key at that moment.
   */
  Ref find(Key key) {
    byte fp = fingerprint(key.hash);
    retry:
    for (;;) {
      int segments = file.segmentCount();
      for (int s = 0; s < segments; s++) {
        long page = page(key, s);
        audit(s, page);
        for (int w = 0; w < SLOTS_PER_PAGE / 8; w++) {
          long m = matches(map.getLongVolatile(page + w * 8L), fp);
          for (; m != 0; m &= m - 1) {
            int cell = w * 8 + (Long.numberOfTrailingZeros(m) >>> 3);
            if (cell == 0) {
              continue;
            }
            long slot = page + ((long) cell << 6);
            long meta = map.getLongVolatile(slot + S_META);
            int state = state(meta);
            if ((state != LIVE && state != RESERVED) || map.getLong(slot + S_KEY_HASH) != key.hash) {
              continue;
            }
            long mask = map.getLongVolatile(slot + S_MASK);
            long expiresAt = map.getLongVolatile(slot + S_EXPIRY); // after the mask: see Ref
            boolean same = heap.matches(map.getIntVolatile(slot + S_KEY_REF), key.bytes);
            long raw = map.getLongVolatile(slot + S_RAW); // before the re-check: a word of this mask, or SEALED
            if (map.getLongVolatile(slot + S_META) != meta || map.getLongVolatile(slot + S_MASK) != mask) {
              if (same) {
                continue retry; // it changed under us: look again
              }
              continue;
            }
            if (same) {
              return new Ref(slot, mask, meta, expiresAt, raw);
            }
          }
        }
      }
      return null;
    }
  }

  // ---------------------------------------------------------------- damage

  private static final int AUDIT_TRIES = 4;

  /**
   * Checks every slot of {@code page} (in segment {@code s}) this process has not yet found
   * sound; see the class comment. Throws a {@link dev.tally.StoreException} naming the first
   * damaged slot.
   */
  void audit(int s, long page) {
    java.util.concurrent.atomic.AtomicLongArray bits = file.audited(s);
    int p = (int) ((page - file.segmentOffset(s)) >>> 12);
    long known = bits.get(p);
    if (known == -1L) {
      return;
    }
    long sound = known | 1L; // cell 0 holds the fingerprints
    for (int cell = 1; cell < SLOTS_PER_PAGE; cell++) {
      if ((known & (1L << cell)) != 0) {
        continue;
      }
      long slot = page + ((long) cell << 6);
      String why = SlotAudit.BUSY;
      for (int t = 0; t < AUDIT_TRIES && (SlotAudit.BUSY.equals(why) || SlotAudit.RECORD_FAILED.equals(why)); t++) {
        if (t > 0) {
          Thread.yield(); // let a writer of the slot finish
        }
        why = SlotAudit.problem(map, heap, slot);
      }
      if (why == null) {
        sound |= 1L << cell;
      } else if (!SlotAudit.BUSY.equals(why)) {
        throw damaged(slot, s, why);
      }
    }
    if (sound != known) {
      bits.accumulateAndGet(p, sound, (a, b) -> a | b);
    }
  }

  dev.tally.StoreException damaged(long slot, int s, String why) {
    return new dev.tally.StoreException("the Tally store file " + file.path() + " is damaged: the"
        + " slot at offset " + slot + " (segment " + s + ") cannot be trusted: " + why + ". It is"
        + " refused rather than read as another key or value, or taken for a missing key;"
        + " LocalStoreInspector verify lists every damaged slot. Restore the file from a copy");
  }

  // ---------------------------------------------------------------- locked operations

  /** One slot locked by an operation: what it held when sealed, and what it will hold. */
  static final class Held {
    final long slot;
    final long image;
    final Key key;
    int state;
    boolean present;
    boolean floating;
    long bits;
    long expiresAt;
    long mask;
    int keyRef;

    boolean changed;
    boolean nowPresent;
    boolean nowFloating;
    long nowBits;
    long nowExpiresAt;

    /** The slot held a rate limiter's record when locked (live or expired); bits is its ref. */
    boolean record;
    boolean nowRecord;

    boolean claimed;
    boolean finalLive;
    long finalMask;
    boolean freeKey;
    /** A record to free once the operation is over (0: none). */
    int freeRecord;

    Held(long slot, long image, Key key) {
      this.slot = slot;
      this.image = image;
      this.key = key;
    }

    /** Sets the value this slot will hold. */
    void set(boolean floating, long bits, long expiresAt) {
      changed = true;
      nowPresent = true;
      nowFloating = floating;
      nowRecord = false;
      nowBits = bits;
      nowExpiresAt = expiresAt;
    }

    /** Points this slot at a new rate limiter state record. */
    void setRecord(int ref, long expiresAt) {
      changed = true;
      nowPresent = true;
      nowFloating = false;
      nowRecord = true;
      nowBits = ref & 0xFFFF_FFFFL;
      nowExpiresAt = expiresAt;
    }

    /** Makes the key missing. */
    void remove() {
      changed = true;
      nowPresent = false;
    }

    /** The working value, as a transaction sees it after its earlier operations. */
    boolean livePresent() {
      return changed ? nowPresent : present;
    }

    boolean liveFloating() {
      return changed ? nowFloating : floating;
    }

    long liveBits() {
      return changed ? nowBits : bits;
    }

    long liveExpiresAt() {
      return changed ? nowExpiresAt : expiresAt;
    }

    Number value() {
      long b = liveBits();
      return liveFloating() ? (Number) Double.longBitsToDouble(b) : (Number) b;
    }
  }

  /**
   * Locks {@code key}'s slot for {@code op}, sealed and journaled. A missing key gets a claimed
   * slot if {@code create}, else the result is null (and nothing is locked).
   */
  Held lock(Op op, Key key, boolean create) {
    return lock(op, key, create, false);
  }

  /**
   * {@link #lock}, for a key that is most likely missing (a fresh operation id) if
   * {@code likelyNew}: it goes straight to the claim, whose lookup under the insert stripe tells
   * whether the key exists, rather than looking it up once more before.
   */
  Held lock(Op op, Key key, boolean create, boolean likelyNew) {
    if (create && likelyNew) {
      Held h = claim(op, key);
      if (h != null) {
        return h;
      }
    }
    for (;;) {
      Ref ref = find(key);
      if (ref == null) {
        if (!create) {
          return null;
        }
        Held h = claim(op, key);
        if (h != null) {
          return h;
        }
        continue; // someone inserted it meanwhile
      }
      long slot = ref.slot;
      locks.lockSlot(slot, op.entry);
      long meta = map.getLongVolatile(slot + S_META);
      if (state(meta) != LIVE || map.getLong(slot + S_KEY_HASH) != key.hash
          || !heap.matches(map.getInt(slot + S_KEY_REF), key.bytes)) {
        locks.unlockSlot(slot); // deleted or reused before we got it
        continue;
      }
      return seal(op, slot, key, LIVE, op.now());
    }
  }

  /**
   * Journals the locked slot and freezes its value: see the class comment. Returns what it held.
   */
  private Held seal(Op op, long slot, Key key, int state, long now) {
    long image = op.entry.image(slot);
    long mask = map.getLong(slot + S_MASK);
    long held;
    for (;;) {
      long r = map.getLongVolatile(slot + S_RAW);
      if (r == SEALED) {
        held = map.getLong(slot + S_HELD);
        break;
      }
      held = state == LIVE ? r ^ mask : 0;
      map.setLong(image + S_HELD, held);
      map.setLong(slot + S_HELD, held);
      if (map.casLong(slot + S_RAW, r, SEALED)) {
        break;
      }
    }
    Held h = new Held(slot, image, key);
    long meta = map.getLongVolatile(slot + Layout.S_META);
    h.state = state;
    h.floating = floating(meta);
    h.record = state == LIVE && record(meta);
    h.bits = held;
    h.expiresAt = map.getLong(slot + S_EXPIRY);
    h.mask = mask;
    h.keyRef = map.getInt(slot + S_KEY_REF);
    h.present = state == LIVE && !expired(h.expiresAt, now);
    op.held.add(h);
    return h;
  }

  /** Locks and seals {@code slot} if it holds an expired key and nobody holds or awaits it. */
  Held tryLockExpired(Op op, long slot, long now) {
    if (!locks.tryLockSlot(slot, op.entry)) {
      return null;
    }
    long meta = map.getLongVolatile(slot + S_META);
    if (state(meta) != LIVE || !expired(map.getLong(slot + S_EXPIRY), now)) {
      locks.unlockSlot(slot);
      return null;
    }
    return seal(op, slot, null, LIVE, now);
  }

  /**
   * Claims a free slot for a missing key under its insert stripe, as {@code RESERVED}; returns
   * null if the key turned out to exist after all.
   *
   * <p>The first pass looks only at the slots whose fingerprint byte says free (0), one line
   * per segment, so a page that is full costs one read however many segments the table has
   * (without it, a table grown to many segments read the meta of every slot of each full page
   * for every new key). A free slot whose fingerprint is stale (left by a process killed between
   * a removal's commit and the clearing of its fingerprint) is missed by that pass; the second
   * pass, which runs only when the first found no room, visits every slot as before, and only
   * then does the table grow.
   */
  private Held claim(Op op, Key key) {
    long stripe = STRIPES_AT + (key.hash >>> 52) * 8;
    locks.lockWord(stripe);
    try {
      if (find(key) != null) {
        return null;
      }
      int first = (int) Long.remainderUnsigned(key.hash, SLOTS_PER_PAGE - 1);
      int segments = file.segmentCount();
      for (int s = 0; s < segments; s++) {
        long page = page(key, s);
        audit(s, page);
        long free = freeCells(page);
        // cells from first + 1 up, then from 1: the order of the exhaustive pass below
        long[] runs = {free & (-1L << (first + 1)), free & ~(-1L << (first + 1))};
        for (long run : runs) {
          for (long m = run; m != 0; m &= m - 1) {
            Held h = tryClaim(op, key, page + ((long) Long.numberOfTrailingZeros(m) << 6));
            if (h != null) {
              return h;
            }
          }
        }
      }
      for (int s = 0; ; s++) {
        file.ensureSegment(s);
        long page = page(key, s);
        audit(s, page);
        for (int i = 0; i < SLOTS_PER_PAGE - 1; i++) {
          Held h = tryClaim(op, key, page + ((long) (1 + (first + i) % (SLOTS_PER_PAGE - 1)) << 6));
          if (h != null) {
            return h;
          }
        }
      }
    } finally {
      locks.unlockWord(stripe);
    }
  }

  /**
   * The cells of {@code page} whose fingerprint byte has its high bit clear, as a bit set: the
   * free slots (and any whose fingerprint is damaged, which {@link #tryClaim} checks anyway).
   */
  private long freeCells(long page) {
    long free = 0;
    for (int w = 0; w < SLOTS_PER_PAGE / 8; w++) {
      for (long z = ~map.getLongVolatile(page + w * 8L) & HIGHS; z != 0; z &= z - 1) {
        free |= 1L << (w * 8 + (Long.numberOfTrailingZeros(z) >>> 3));
      }
    }
    return free & ~1L; // cell 0 holds the fingerprints
  }

  /** Claims {@code slot} for {@code key} if it is free and nobody holds it; else null. */
  private Held tryClaim(Op op, Key key, long slot) {
    int state = state(map.getLongVolatile(slot + S_META));
    if (state == LIVE || state == RESERVED || !locks.tryLockSlot(slot, op.entry)) {
      return null; // a locked free slot is being claimed by someone else: skip it
    }
    state = state(map.getLongVolatile(slot + S_META));
    if (state != EMPTY && state != TOMBSTONE) {
      locks.unlockSlot(slot);
      return null;
    }
    Held h = seal(op, slot, key, state, op.now());
    int keyRef = heap.allocate(key.bytes);
    long mask = newMask(0);
    map.setLong(slot + S_HELD, 0);
    map.setLong(slot + S_EXPIRY, 0);
    map.setLong(slot + S_KEY_HASH, key.hash);
    map.setIntVolatile(slot + S_KEY_REF, keyRef);
    map.setLongVolatile(slot + S_MASK, mask);
    map.setByteVolatile(fingerprintAt(slot), fingerprint(key.hash));
    writeMeta(map, slot, RESERVED);
    h.state = RESERVED;
    h.keyRef = keyRef;
    h.mask = mask;
    h.present = false;
    h.claimed = true;
    return h;
  }

  /**
   * Writes every change of {@code op}, marks it committed, unseals and unlocks its slots. An
   * operation with no change (an abort) goes the same way and changes nothing but the claims
   * it made, which become tombstones.
   */
  void commit(Op op, boolean durable) {
    boolean sync = durable && op.sync == LocalOptions.Sync.ALWAYS;
    if (sync) {
      op.entry.force(); // the undo images reach the device before the slots change
      for (Held h : op.held) {
        if (h.changed && h.nowPresent && h.nowRecord) {
          file.forceKey((int) h.nowBits); // and a new state record before the slot naming it
        }
      }
    }
    Runnable hook = whileLockedHook;
    if (hook != null && durable) {
      hook.run();
    }
    int n = 0;
    for (Held h : op.held) {
      writeFields(h);
      if (++n == 1 && op.held.size() > 1 && durable && (hook = midTransactionHook) != null) {
        hook.run();
      }
      if (h.changed && h.nowRecord && durable && (hook = uncommittedRecordHook) != null) {
        hook.run();
      }
    }
    op.entry.committed();
    op.applied = durable;
    for (Held h : op.held) {
      if (!h.finalLive) {
        map.setByteVolatile(fingerprintAt(h.slot), (byte) 0); // only now: no rollback can revive it
      }
    }
    dev.tally.StoreException notForced = null;
    if (sync) {
      try {
        for (Held h : op.held) {
          map.force(h.slot, Layout.SLOT);
          if (h.claimed && h.finalLive) {
            file.forceKey(h.keyRef);
          }
        }
        map.force(0, PAGE);
        op.entry.force();
      } catch (dev.tally.StoreException e) {
        notForced = e; // committed all the same: finish, unlock, then say it is not on the device
      }
    }
    for (Held h : op.held) {
      if (h.finalLive) {
        map.setLongVolatile(h.slot + S_RAW, map.getLong(h.slot + S_HELD) ^ h.finalMask);
      }
    }
    op.entry.retire();
    if (sync && notForced == null) {
      try {
        op.entry.force(); // the header, now listing nothing, before any slot can be locked again
      } catch (dev.tally.StoreException e) {
        notForced = e;
      }
    }
    for (Held h : op.held) {
      locks.unlockSlot(h.slot);
    }
    file.dirty = true;
    if ((hook = unlockedHook) != null) {
      hook.run();
    }
    if (notForced != null) {
      throw notForced;
    }
  }

  private void writeFields(Held h) {
    long slot = h.slot;
    if (h.changed && h.nowPresent && h.nowRecord) {
      long mask = h.nowBits ^ SEALED; // held ^ mask stays SEALED: see the class comment
      map.setLong(slot + S_HELD, h.nowBits);
      map.setLong(slot + S_EXPIRY, h.nowExpiresAt);
      map.setLongVolatile(slot + S_MASK, mask);
      writeMeta(map, slot, LIVE | RECORD);
      h.finalLive = true;
      h.finalMask = mask;
      h.freeRecord = h.record ? (int) h.bits : 0;
    } else if (h.changed && h.nowPresent) {
      // a new incarnation whenever the kind or the expiry changes: see "The value word"
      boolean fresh = !h.present || h.record || h.nowFloating != h.floating || h.nowExpiresAt != h.expiresAt;
      long mask = fresh ? newMask(h.nowBits) : h.mask;
      if ((h.nowBits ^ mask) == SEALED) {
        mask = newMask(h.nowBits);
      }
      map.setLong(slot + S_HELD, h.nowBits);
      map.setLong(slot + S_EXPIRY, h.nowExpiresAt);
      map.setLongVolatile(slot + S_MASK, mask);
      writeMeta(map, slot, LIVE | (h.nowFloating ? FLOATING : 0));
      h.finalLive = true;
      h.finalMask = mask;
      h.freeRecord = h.record ? (int) h.bits : 0;
    } else if (h.changed || h.state != LIVE || (!h.present && !h.record)) {
      // a removal, a claim not used, or an expired counter met on the way: a tombstone (an
      // expired limiter keeps its last instant until the sweeper removes it)
      writeMeta(map, slot, TOMBSTONE | (h.floating ? FLOATING : 0));
      h.finalLive = false;
      h.freeKey = h.state == LIVE || h.claimed;
      h.freeRecord = h.record ? (int) h.bits : 0;
    } else {
      h.finalLive = true; // unchanged: held still has the value
      h.finalMask = h.mask;
    }
  }
}
