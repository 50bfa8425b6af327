package dev.tally.local;

import dev.tally.StoreException;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.OperationRecord;
import java.nio.charset.StandardCharsets;
import java.util.SortedMap;

/**
 * Operation ids on the file store: how {@link LocalStore#applyOnce} applies a mutation at most
 * once per id, across every thread and process sharing the file, whatever instant a process dies.
 *
 * <h2>Where an id lives</h2>
 *
 * An id is a key of the table like any other, with a slot of its own, so it needs no structure
 * of its own and is locked, journaled, recovered, checked and swept by the machinery every key
 * has. Its key is the byte {@code 0xFF} followed by the id's ASCII characters. {@code 0xFF}
 * never occurs in UTF-8, so no counter or limiter name can be an id's key, and the ids of all
 * processes share one space per file. The slot is a <em>record</em> slot, as a rate limiter's
 * ({@link Table}): {@code held} names a record in the key heap, written once and never changed
 * in place, and {@code expiry} is when the id is forgotten. The record is a state record of the
 * limiter format whose words carry the {@link OperationRecord#encode()} text: word 0 is
 * {@link #TAG} with the text's length in its low half (no limiter algorithm has that tag), the
 * following words the text's bytes. Its "last now" is the instant the id was recorded at.
 *
 * <h2>One step</h2>
 *
 * A call locks the id's slot first (claiming a slot if the id is new), then the mutation's keys in
 * the order every locked operation uses, all in one {@link Op}, hence one journal entry:
 * <ol>
 *   <li>If the slot holds a live record, the call returns the result the record holds (or refuses
 *       an id first used for another operation) and writes nothing.
 *   <li>Otherwise it runs the mutation's locked body, then points the id's slot at a new record of
 *       its result, expiring after the retention, and commits the whole {@link Op} at once.
 * </ol>
 * Calls with one id are serialized by the id's slot lock, whichever process they come from: the
 * first applies, the later ones find its record. A mutation that throws leaves the {@link Op}
 * uncommitted, so neither the mutation nor the id is written (a claimed slot becomes a tombstone)
 * and a retry applies afresh. A process killed before the commit mark is rolled back on every
 * slot, the id's included; one killed after it is rolled forward on every slot: the mutation and
 * its id are both there or both absent, as for any transaction ({@link Journal}). Nobody waits
 * for the id's slot while holding another lock, so the id's slot coming first cannot deadlock.
 *
 * <h2>Expiry and cost</h2>
 *
 * The slot expires on the store's {@link dev.tally.TimeSource}, as counters do. From then on a
 * call treats the id as new (and replaces the record), and the maintenance sweeper turns the slot
 * into a reusable tombstone and frees its key and record. One id costs a slot (64 bytes), a key
 * record (the size class of 9 bytes plus the id: 48 bytes for a UUID) and a state record (the
 * size class of 24 bytes plus the text rounded up to words: 64 bytes for an increment), all in
 * the file; the process keeps nothing.
 */
final class OperationIds {
  /** The first byte of every id's key; never a byte of UTF-8. */
  private static final byte PREFIX = (byte) 0xFF;
  /** Word 0 of an id's record, "OPID" in its high half; the low half is the text's length. */
  static final long TAG = 0x4449504FL << 32;
  /** The longest record text one state record holds. */
  static final int MAX_TEXT = (Layout.MAX_RECORD_WORDS - 1) * 8;

  private final LocalStore store;
  private final Table table;
  private final long retentionNanos;

  OperationIds(LocalStore store, Table table, long retentionNanos) {
    this.store = store;
    this.table = table;
    this.retentionNanos = retentionNanos;
  }

  /** The table key of {@code id}. */
  static Key key(OperationId id) {
    String v = id.value();
    byte[] b = new byte[1 + v.length()];
    b[0] = PREFIX;
    for (int i = 0; i < v.length(); i++) {
      b[1 + i] = (byte) v.charAt(i); // printable ASCII, checked by OperationId
    }
    return new Key("operation id " + v, b, true);
  }

  /** Whether a key record's bytes are an operation id's key. */
  static boolean isIdKey(byte[] key) {
    return key != null && key.length > 0 && key[0] == PREFIX;
  }

  Object applyOnce(OperationId id, Mutation mutation) {
    // Refused before any I/O: the id takes one of the journal entry's images.
    SortedMap<String, Key> txKeys = mutation instanceof Mutation.Transact t
        ? LocalStore.transactionKeys(t.ops(), 1) : null;
    Key idKey = key(id);
    try (Op op = store.begin()) {
      Table.Held h = op.lockLikelyNew(idKey); // a first attempt is the common case
      if (h.present) {
        return read(h, idKey).replay(id, mutation); // throws for another operation; writes nothing
      }
      long now = op.now();
      Object result = apply(op, mutation, txKeys);
      long[] words = words(OperationRecord.of(mutation, result).encode(), mutation);
      long expiresAt = now + retentionNanos;
      if (retentionNanos > 0 && expiresAt - now < 0) {
        expiresAt = Long.MAX_VALUE; // a retention of centuries: as good as never
      }
      h.setRecord(table.heap.allocateRecord(idKey.hash, now, words), expiresAt == 0 ? 1 : expiresAt);
      store.commit(op);
      return result;
    }
  }

  private Object apply(Op op, Mutation m, SortedMap<String, Key> txKeys) {
    if (m instanceof Mutation.Incr i) {
      return store.incrLocked(op, new Key(i.key()), i.delta(), i.dflt(), i.create());
    } else if (m instanceof Mutation.IncrDouble d) {
      return store.incrDoubleLocked(op, new Key(d.key()), d.delta(), d.dflt());
    } else if (m instanceof Mutation.Put p) {
      store.putLocked(op, new Key(p.key()), p.value(), p.ttlNanos());
      return null;
    } else if (m instanceof Mutation.Add a) {
      return store.addLocked(op, new Key(a.key()), a.value(), a.ttlNanos());
    } else if (m instanceof Mutation.Pop p) {
      return store.popLocked(op, new Key(p.key()), p.integerOnly());
    } else if (m instanceof Mutation.Delete d) {
      return store.deleteLocked(op, new Key(d.key()));
    } else if (m instanceof Mutation.Touch t) {
      return store.touchLocked(op, new Key(t.key()), t.ttlNanos());
    } else if (m instanceof Mutation.Transact t) {
      return store.transactLocked(op, txKeys, t.ops());
    } else if (m instanceof Mutation.LimiterStep l) {
      return store.limitLocked(op, new Key(l.key()), l.call(), l.operation(), l.permits());
    }
    throw new IllegalArgumentException("unknown mutation " + m);
  }

  /** The record's text as state record words: see the class comment. */
  static long[] words(String text, Mutation mutation) {
    byte[] b = text.getBytes(StandardCharsets.US_ASCII);
    if (b.length > MAX_TEXT) {
      throw new IllegalArgumentException("the result of this " + kind(mutation) + " with an operation"
          + " id takes " + b.length + " bytes to record, and the file store records at most " + MAX_TEXT
          + " per id (a transaction of up to 37 operations always fits); nothing was applied");
    }
    long[] words = new long[1 + (b.length + 7) / 8];
    words[0] = TAG | b.length;
    for (int i = 0; i < b.length; i++) {
      words[1 + i / 8] |= (b[i] & 0xFFL) << (8 * (i % 8));
    }
    return words;
  }

  /** The text of an id's record words, or null if they are not one. */
  static String text(long[] words) {
    if (words.length == 0 || (words[0] & 0xFFFF_FFFF_0000_0000L) != TAG) {
      return null;
    }
    int n = (int) words[0];
    if (n < 0 || words.length != 1 + (n + 7) / 8) {
      return null;
    }
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) (words[1 + i / 8] >>> (8 * (i % 8)));
    }
    return new String(b, StandardCharsets.US_ASCII);
  }

  private OperationRecord read(Table.Held h, Key idKey) {
    KeyHeap.State st = h.record ? table.heap.readRecord((int) h.bits, idKey.hash) : null;
    String text = st == null || !st.checked() ? null : text(st.words());
    if (text == null) {
      throw new StoreException("the record of " + idKey + " in " + table.file.path() + " is damaged"
          + " (the slot at offset " + h.slot + "); the id cannot be replayed");
    }
    try {
      return OperationRecord.decode(text);
    } catch (IllegalStateException e) {
      throw new StoreException("the record of " + idKey + " in " + table.file.path() + ": "
          + e.getMessage(), e);
    }
  }

  private static String kind(Mutation m) {
    return m instanceof Mutation.Transact ? "transaction" : "operation";
  }
}
