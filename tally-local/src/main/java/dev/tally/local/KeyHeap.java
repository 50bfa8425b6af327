package dev.tally.local;

import static dev.tally.local.Layout.FREE;
import static dev.tally.local.Layout.HEAP_LIMIT;
import static dev.tally.local.Layout.H_FREE_LISTS;
import static dev.tally.local.Layout.H_HEAP_TOP;
import static dev.tally.local.Layout.SIZE_CLASSES;

import dev.tally.StoreException;

/**
 * Where keys and rate limiters' state records live: records of {@code u32 length, u32 size
 * class, bytes}, 8-aligned, in a heap
 * that grows by chunks of doubling size (chunk {@code n} holds {@code heap0 << n} bytes and
 * starts at virtual offset {@code heap0 * (2^n - 1)}). A slot names its key by a u32 reference,
 * the record's virtual offset divided by 8.
 *
 * <p>Space is reused by size class: a deleted key's record goes onto its class's free list, a
 * Treiber stack whose head carries a 32-bit tag that changes on every push and pop, so a
 * compare-and-swap against a head that was popped and pushed back in between fails. New space
 * comes from a bump pointer. A process that dies between taking a record and publishing it
 * leaks that one record; nothing else is lost.
 *
 * <p>Readers that compare keys without a lock may read a record that is being freed and
 * reused; they re-check the slot afterwards (see {@link Table#find}), so a torn comparison is
 * never trusted. Reads are bounds-checked against the heap top, so a reference torn by a crash
 * cannot point outside the mapped file.
 *
 * <p>The heap top and the free lists are the two structures here that processes change without
 * a lock, so neither can sit under the header's directory checksum; each carries its own check.
 * The top word is {@code top / 8 | check << 32}, the check a hash of the low half, so a damaged
 * top is noticed before anything is allocated from it (and the first opener of the file moves it
 * to the end of the last chunk, leaking the rest of the chunk rather than handing out a record
 * twice). A record on a free list has {@link Layout#FREE} set in its class word, and a pop
 * follows a link only to such a record: a damaged link (or head) that points at a live record
 * is dropped with the rest of its list, which leaks the records on it and overwrites nothing.
 *
 * <p>A state record ({@link #allocateRecord}) holds a limiter's words after a "last now" and a
 * check word ({@link Layout}). It is written once, before any slot points at it, and freed only
 * after no committed slot does, so whoever holds the slot's lock reads it whole.
 */
final class KeyHeap implements SlotAudit.Records {
  private final StoreFile file;
  private final FileMap map;

  KeyHeap(StoreFile file) {
    this.file = file;
    this.map = file.map;
  }

  /** Stores {@code key} and returns its reference. */
  int allocate(byte[] key) {
    int cls = Layout.sizeClass(key.length);
    long v = pop(cls);
    if (v == 0) {
      v = bump(SIZE_CLASSES[cls]);
    }
    long at = file.heapAddress(v);
    map.putBytes(at + 8, key, 0, key.length);
    map.setInt(at + 4, cls);
    map.setIntVolatile(at, key.length);
    return (int) (v >>> 3);
  }

  /** A rate limiter's state as stored: the machine's words and the latest time they were decided at. */
  record State(long lastNow, long[] words, boolean checked) {}

  /**
   * Stores a rate limiter's state for the key hashed {@code keyHash} and returns its reference.
   *
   * @throws IllegalArgumentException if the state has more words than the largest size class holds
   */
  int allocateRecord(long keyHash, long lastNow, long[] words) {
    if (words.length > Layout.MAX_RECORD_WORDS) {
      throw new IllegalArgumentException("a rate limiter on the file store has at most "
          + Layout.MAX_RECORD_WORDS / 6 + " limits; this one has " + words.length / 6);
    }
    int bytes = Layout.R_WORDS - 8 + words.length * 8;
    int cls = Layout.sizeClass(bytes);
    long v = pop(cls);
    if (v == 0) {
      v = bump(SIZE_CLASSES[cls]);
    }
    long at = file.heapAddress(v);
    map.setLong(at + Layout.R_LAST_NOW, lastNow);
    for (int i = 0; i < words.length; i++) {
      map.setLong(at + Layout.R_WORDS + i * 8L, words[i]);
    }
    map.setLong(at + Layout.R_CHECK, Hashing.record(keyHash, lastNow, words));
    map.setInt(at + 4, cls);
    map.setIntVolatile(at, bytes);
    return (int) (v >>> 3);
  }

  /**
   * The state record {@code ref}, or null if it is not a plausible record (a bad reference, a
   * length that is not a whole number of words or does not fit its size class). {@code checked}
   * says whether its check word matches {@code keyHash} and its contents.
   */
  State readRecord(int ref, long keyHash) {
    long v = (ref & 0xFFFF_FFFFL) << 3;
    if (!inHeap(v, Layout.R_WORDS)) {
      return null;
    }
    long at = file.heapAddress(v);
    int bytes = map.getIntVolatile(at);
    int cls = map.getInt(at + 4);
    int n = (bytes - (Layout.R_WORDS - 8)) / 8;
    if (n < 0 || bytes != Layout.R_WORDS - 8 + n * 8 || n > Layout.MAX_RECORD_WORDS
        || cls < 0 || cls >= SIZE_CLASSES.length || SIZE_CLASSES[cls] < 8 + bytes
        || !inHeap(v, 8L + bytes)) {
      return null;
    }
    long lastNow = map.getLong(at + Layout.R_LAST_NOW);
    long[] words = new long[n];
    for (int i = 0; i < n; i++) {
      words[i] = map.getLong(at + Layout.R_WORDS + i * 8L);
    }
    boolean checked = map.getLong(at + Layout.R_CHECK) == Hashing.record(keyHash, lastNow, words);
    return new State(lastNow, words, checked);
  }

  /** Gives a record back; its slot has been made a tombstone. */
  void free(int ref) {
    long v = (ref & 0xFFFF_FFFFL) << 3;
    if (!inHeap(v, 8)) {
      return;
    }
    long at = file.heapAddress(v);
    int cls = map.getInt(at + 4);
    if (cls < 0 || cls >= SIZE_CLASSES.length) {
      return; // not a record we wrote: leak rather than corrupt a free list
    }
    long head = H_FREE_LISTS + cls * 8L;
    map.setIntVolatile(at + 4, cls | FREE); // a second free of it finds the mark and leaks it instead
    for (;;) {
      long h = map.getLongVolatile(head);
      map.setIntVolatile(at, (int) h);
      long next = (v >>> 3) | (((h >>> 32) + 1) << 32);
      if (map.casLong(head, h, next)) {
        return;
      }
    }
  }

  private long pop(int cls) {
    long head = H_FREE_LISTS + cls * 8L;
    for (;;) {
      long h = map.getLongVolatile(head);
      long v = (h & 0xFFFF_FFFFL) << 3;
      if (v == 0) {
        return 0;
      }
      if (!inHeap(v, 8)) {
        map.casLong(head, h, ((h >>> 32) + 1) << 32); // a torn list: drop it
        continue;
      }
      long at = file.heapAddress(v);
      if (map.getIntVolatile(at + 4) != (cls | FREE)) {
        if (map.getLongVolatile(head) == h) {
          // Not a free record: a damaged link or head. Drop the list (leaking what is on it)
          // rather than hand out a record a slot still names.
          map.casLong(head, h, ((h >>> 32) + 1) << 32);
        }
        continue; // or popped by someone else meanwhile
      }
      int next = map.getIntVolatile(at);
      if (map.casLong(head, h, (next & 0xFFFF_FFFFL) | (((h >>> 32) + 1) << 32))) {
        return v;
      }
    }
  }

  private long bump(int size) {
    for (;;) {
      long word = map.getLongVolatile(H_HEAP_TOP);
      long top = top(word);
      long start = top;
      int chunk = file.heapChunkOf(start);
      long end = file.heapChunkBase(chunk + 1);
      if (start + size > end) {
        start = end; // the tail of a chunk too short for this record stays unused
        chunk++;
      }
      if (start + size > HEAP_LIMIT) {
        throw new StoreException("the key heap of " + file.path() + " is full (32 GiB of keys)");
      }
      file.ensureHeapChunk(chunk);
      long at = file.heapAddress(start);
      if (!map.oneWindow(at, size)) {
        long windowEnd = ((at >>> map.windowShift()) + 1) << map.windowShift();
        map.casLong(H_HEAP_TOP, word, topWord(start + (windowEnd - at))); // skip to the next mapping
        continue;
      }
      if (map.casLong(H_HEAP_TOP, word, topWord(start + size))) {
        return start;
      }
    }
  }

  private boolean inHeap(long v, long len) {
    return v >= Layout.HEAP_START && v + len <= top(map.getLongVolatile(H_HEAP_TOP));
  }

  /** The heap top word for virtual offset {@code top} (a multiple of 8). */
  static long topWord(long top) {
    int ref = (int) (top >>> 3);
    return (ref & 0xFFFF_FFFFL) | ((long) Hashing.heapTop(ref) << 32);
  }

  /** Whether {@code word} is a heap top word whose check matches. */
  static boolean topOk(long word) {
    return Hashing.heapTop((int) word) == (int) (word >>> 32);
  }

  /** The virtual offset a heap top word names; refused if the word fails its check. */
  long top(long word) {
    if (!topOk(word)) {
      throw new StoreException("the Tally store file " + file.path() + " is damaged: its key heap"
          + " top (header offset " + H_HEAP_TOP + ") fails its check; close every process using it,"
          + " and the next to open it moves the top past every record in use");
    }
    return (word & 0xFFFF_FFFFL) << 3;
  }

  /**
   * Run by the first opener: a top that fails its check, or lies outside the chunks, is moved
   * to the end of the last chunk. That leaks the rest of the chunk and never hands out a record
   * in use. Returns whether it had to.
   */
  boolean repairTop(long capacity) {
    long word = map.getLongVolatile(H_HEAP_TOP);
    long top = (word & 0xFFFF_FFFFL) << 3;
    if (topOk(word) && top >= Layout.HEAP_START && top <= capacity) {
      return false;
    }
    map.setLongVolatile(H_HEAP_TOP, topWord(Math.min(capacity, HEAP_LIMIT)));
    return true;
  }

  /** Whether record {@code ref} holds exactly {@code key}; false for any bad reference. */
  boolean matches(int ref, byte[] key) {
    long v = (ref & 0xFFFF_FFFFL) << 3;
    if (!inHeap(v, 8L + key.length)) {
      return false;
    }
    long at = file.heapAddress(v);
    if (map.getIntVolatile(at) != key.length) {
      return false;
    }
    long p = at + 8;
    int i = 0;
    for (; i + 8 <= key.length; i += 8) {
      if (map.getLong(p + i) != Table.longAt(key, i)) {
        return false;
      }
    }
    for (; i < key.length; i++) {
      if (map.getByte(p + i) != key[i]) {
        return false;
      }
    }
    return true;
  }

  /** Whether record {@code ref} starts with {@code prefix}. */
  boolean startsWith(int ref, byte[] prefix) {
    long v = (ref & 0xFFFF_FFFFL) << 3;
    if (!inHeap(v, 8)) {
      return false;
    }
    long at = file.heapAddress(v);
    int len = map.getIntVolatile(at);
    if (len < prefix.length || len > dev.tally.Counters.MAX_KEY_BYTES || !inHeap(v, 8L + len)) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (map.getByte(at + 8 + i) != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  /** The bytes of record {@code ref}, or null if it is not a plausible record. */
  byte[] read(int ref) {
    long v = (ref & 0xFFFF_FFFFL) << 3;
    if (!inHeap(v, 8)) {
      return null;
    }
    long at = file.heapAddress(v);
    int len = map.getIntVolatile(at);
    if (len <= 0 || len > dev.tally.Counters.MAX_KEY_BYTES || !inHeap(v, 8L + len)) {
      return null;
    }
    byte[] b = new byte[len];
    map.getBytes(at + 8, b, 0, len);
    return b;
  }

  @Override
  public byte[] key(int ref) {
    return read(ref);
  }

  @Override
  public boolean recordOk(long ref, long keyHash) {
    State s = ref >>> 32 != 0 ? null : readRecord((int) ref, keyHash);
    return s != null && s.checked();
  }

  /** Empties every free list: after a crash of the machine their links cannot be trusted. */
  void dropFreeLists() {
    for (int c = 0; c < SIZE_CLASSES.length; c++) {
      map.setLongVolatile(H_FREE_LISTS + c * 8L, 0);
    }
  }
}
