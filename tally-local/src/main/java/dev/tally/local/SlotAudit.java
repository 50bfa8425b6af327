package dev.tally.local;

import static dev.tally.local.Layout.EMPTY;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.RESERVED;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_KEY_HASH;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;

import java.lang.invoke.VarHandle;

/**
 * Whether a slot can be trusted: the check a process runs on each slot before it first reads
 * one as a key (lookups, claims, {@code keys}, the sweeper), and the one {@code verify} runs on
 * every slot.
 *
 * <h2>What is checked</h2>
 *
 * An empty slot must be all zero in {@code meta} (slots never become empty again, so an empty
 * state with flags or a checksum is a damaged live one). Any other slot must match its
 * checksum, which covers mask, expiry, key hash, key reference and flags. A live or reserved
 * slot's fingerprint must be its key hash's (a wrong one would hide the key from every lookup),
 * its key record must hash to its key hash (a damaged record would hide the key too), and a
 * limiter's slot must name, through a {@code held} that matches its checksummed mask, a state
 * record that is whole and carries its key's check word. The value word ({@code raw}) is not
 * covered: see docs/local-store.md.
 *
 * <h2>On a store in use</h2>
 *
 * The checked fields change only under the slot's lock, and every change of them writes a new
 * {@code meta} (whose checksum covers them; a new incarnation's random mask makes an equal one
 * a 2<sup>-32</sup> chance). So a read is a consistent snapshot, as with a sequence lock, when
 * the slot was unlocked before it, and {@code meta} and the lock word read the same after it.
 * Otherwise the slot was being written: the answer is {@link #BUSY}, and the caller retries or
 * skips the slot (its locker, whoever it is, checked it before locking it).
 */
final class SlotAudit {
  private SlotAudit() {}

  /** The answer for a slot that changed while it was read. */
  static final String BUSY = "busy";
  /**
   * The answer for a limiter's state record that failed its check. Updates are copy-on-write, and
   * a freed record goes back to its size class's free list, so two quick updates of one key can
   * leave its slot pointing at the very record it named before (A, then B, then A again, with the
   * same meta word) while that record was being refilled: a read that overlapped both sees a torn
   * record in an unchanged slot. The caller reads again before it takes this for damage.
   */
  static final String RECORD_FAILED = "its rate limiter state record is unreadable or fails its check word";

  /** Reads the records a slot names: the key heap of an open store, or the inspector's view. */
  interface Records {
    /** The bytes of key record {@code ref}, or null if it is not a plausible record. */
    byte[] key(int ref);

    /** Whether state record {@code ref} is whole and carries {@code keyHash}'s check word. */
    boolean recordOk(long ref, long keyHash);
  }

  /** Null if {@code slot} can be trusted, {@link #BUSY} if it changed meanwhile, else what is wrong. */
  static String problem(FileMap map, Records records, long slot) {
    if (map.getLongVolatile(slot + S_LOCK) != 0) {
      return BUSY;
    }
    long meta = map.getLongVolatile(slot + S_META);
    String why = fields(map, records, slot, meta);
    VarHandle.loadLoadFence();
    if (map.getLongVolatile(slot + S_META) != meta || map.getLongVolatile(slot + S_LOCK) != 0) {
      return BUSY;
    }
    return why;
  }

  private static String fields(FileMap map, Records records, long slot, long meta) {
    int state = Table.state(meta);
    if (state == EMPTY) {
      return meta == 0 ? null : "an empty slot with flags or a checksum set (a damaged meta word)";
    }
    if (!Table.checksumOk(map, slot, meta)) {
      return "it fails its checksum";
    }
    if (state != LIVE && state != RESERVED) {
      return null;
    }
    long hash = map.getLong(slot + S_KEY_HASH);
    if (map.getByte(Table.fingerprintAt(slot)) != Table.fingerprint(hash)) {
      return "its fingerprint is not its key's, so lookups would miss it";
    }
    byte[] key = records.key(map.getInt(slot + S_KEY_REF));
    if (key == null || Hashing.key(key, 0, key.length) != hash) {
      return "its key record is unreadable or is another key's";
    }
    if (state == LIVE && Table.record(meta)) {
      long held = map.getLong(slot + S_HELD);
      if (map.getLong(slot + S_MASK) != (held ^ SEALED) || held >>> 32 != 0) {
        return "a rate limiter's slot whose record reference does not match its mask";
      }
      if (!records.recordOk(held, hash)) {
        return RECORD_FAILED;
      }
    }
    return null;
  }
}
