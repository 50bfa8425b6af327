package dev.tally.local;

import static dev.tally.local.Layout.EMPTY;
import static dev.tally.local.Layout.ENTRIES;
import static dev.tally.local.Layout.ENTRIES_AT;
import static dev.tally.local.Layout.ENTRY_SIZE;
import static dev.tally.local.Layout.GATE_LOCK_AT;
import static dev.tally.local.Layout.GEOMETRY_BYTES;
import static dev.tally.local.Layout.HEAP_START;
import static dev.tally.local.Layout.H_BOOT;
import static dev.tally.local.Layout.H_CLEAN;
import static dev.tally.local.Layout.H_ENTRIES;
import static dev.tally.local.Layout.H_ENTRIES_AT;
import static dev.tally.local.Layout.H_ENTRY_SIZE;
import static dev.tally.local.Layout.H_FILE_LENGTH;
import static dev.tally.local.Layout.H_GEOMETRY_CHECK;
import static dev.tally.local.Layout.H_GROW_LOCK;
import static dev.tally.local.Layout.H_HEAP0_BYTES;
import static dev.tally.local.Layout.H_HEAP_AT;
import static dev.tally.local.Layout.H_HEAP_CHUNKS;
import static dev.tally.local.Layout.H_HEAP_TOP;
import static dev.tally.local.Layout.H_MAGIC;
import static dev.tally.local.Layout.H_PAGE;
import static dev.tally.local.Layout.H_SEGMENT0_SLOTS;
import static dev.tally.local.Layout.H_SEGMENTS;
import static dev.tally.local.Layout.H_SEGMENT_AT;
import static dev.tally.local.Layout.H_SLOT;
import static dev.tally.local.Layout.H_STRIPES;
import static dev.tally.local.Layout.H_STRIPES_AT;
import static dev.tally.local.Layout.H_VERSION;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.MAGIC;
import static dev.tally.local.Layout.MAX_HEAP_CHUNKS;
import static dev.tally.local.Layout.MAX_SEGMENTS;
import static dev.tally.local.Layout.OPENERS_LOCK_AT;
import static dev.tally.local.Layout.PAGE;
import static dev.tally.local.Layout.REGIONS_AT;
import static dev.tally.local.Layout.RESERVED;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.SLOTS_PER_PAGE;
import static dev.tally.local.Layout.STRIPES;
import static dev.tally.local.Layout.STRIPES_AT;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_KEY_HASH;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;
import static dev.tally.local.Layout.S_WAITER;
import static dev.tally.local.Layout.TOMBSTONE;
import static dev.tally.local.Layout.VERSION;

import dev.tally.StoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;

/**
 * One store file, mapped once per JVM however many {@code Tally} instances open it: the header,
 * the growth of segments and key heap chunks, and the open and close protocol.
 *
 * <h2>Opening and closing</h2>
 *
 * Two byte-range file locks, which the kernel releases when a process dies, tell processes
 * about each other without trusting anything written in the file: every open process holds a
 * shared lock on the "openers" byte, and opening or closing happens under an exclusive lock on
 * the "gate" byte. A process that opens the file and can briefly take the openers byte
 * exclusively is the only one: if the header does not say the last process closed cleanly,
 * it recovers the whole file before anyone else may open it (see {@link #recoverExclusively}).
 * A process that closes and can take the openers byte exclusively is the last: it recovers what
 * dead processes left, forces everything to the device and marks the file clean.
 *
 * <h2>Refusing what is not ours</h2>
 *
 * The header starts with a magic number and a format version; the geometry that follows is
 * checksummed, and the file must be as long as the header says. A file that fails any of these
 * is refused with a {@link StoreException} saying why, and is never written to. A new file gets
 * its magic number last, after everything else is on the device, so a creation cut short is
 * recognized and started over rather than mistaken for a foreign file.
 *
 * <h2>Growth</h2>
 *
 * Segments and heap chunks are appended under the growth lock: extend the file, force its new
 * length to the device (so the header never points past the end of the file, even after a crash
 * of the machine), then publish the region's offset and count in the header. Other processes
 * map new regions when they first see the larger count. Nothing is copied or moved, so growth
 * stops nobody: lookups and increments go on in the existing segments meanwhile.
 */
final class StoreFile {
  private static final Map<Path, StoreFile> OPEN = new HashMap<>();

  final FileMap map;
  final ProcessOwner owner = ProcessOwner.CURRENT;
  final Locks locks;
  final Journal journal;
  final KeyHeap heap;
  final Table table;
  final long segment0Slots;
  final long heap0Bytes;

  /** Set by every write, cleared by the periodic flusher: a hint, so a plain field will do. */
  boolean dirty;

  private final Path path;
  private final FileChannel channel;
  private final FileLock openers;
  private final boolean recovered;
  private volatile long[] segments = new long[0];
  private volatile long[] heapChunks = new long[0];
  private int refs;
  /** The last reference is gone and the file is being closed; guarded by {@code OPEN}. */
  private boolean closing;

  /** Opens (creating if needed) the store file at {@code path}, shared within this JVM. */
  static StoreFile acquire(LocalOptions options) {
    Path path = options.file();
    Path real;
    try {
      Path parent = path.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      try {
        Files.createFile(path);
      } catch (FileAlreadyExistsException e) {
        // opened, or being created, by someone else: the gate lock sorts it out
      }
      real = path.toRealPath();
    } catch (IOException e) {
      throw new StoreException("cannot create the Tally store file " + path + ": " + e, e);
    }
    synchronized (OPEN) {
      StoreFile f;
      while ((f = OPEN.get(real)) != null && f.closing) {
        // A second channel on the file while the last one closes would take file locks this JVM
        // already holds (OverlappingFileLockException), so wait for the close to finish.
        try {
          OPEN.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new StoreException("interrupted while " + real + " was being closed", e);
        }
      }
      if (f == null) {
        f = new StoreFile(real, options);
        OPEN.put(real, f);
      }
      f.refs++;
      return f;
    }
  }

  /**
   * Drops one reference; the last closes the file. The file stays in {@code OPEN}, marked as
   * closing, until its channel is closed: an open meanwhile waits for it, then opens afresh.
   */
  void release() {
    synchronized (OPEN) {
      if (--refs > 0) {
        return;
      }
      closing = true;
    }
    try {
      closeFile();
    } finally {
      synchronized (OPEN) {
        OPEN.remove(path);
        OPEN.notifyAll();
      }
    }
  }

  Path path() {
    return path;
  }

  /** Whether opening this file had to recover it (the last process before did not close it). */
  boolean recoveredOnOpen() {
    return recovered;
  }

  private StoreFile(Path path, LocalOptions options) {
    this.path = path;
    FileChannel ch = null;
    try {
      ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
      this.channel = ch;
      FileLock gate = ch.lock(GATE_LOCK_AT, 1, false);
      try {
        FileLock probe = ch.tryLock(OPENERS_LOCK_AT, 1, false);
        boolean first = probe != null;
        if (probe != null) {
          probe.release();
        }
        ByteBuffer header = readHeader(ch);
        if (first && uninitialized(header, ch.size())) {
          initialize(ch, options);
          header = readHeader(ch);
        }
        long fileLength = validate(path, header, ch.size());
        this.segment0Slots = header.getLong(H_SEGMENT0_SLOTS);
        this.heap0Bytes = header.getLong(H_HEAP0_BYTES);
        this.map = new FileMap(ch, options.windowShift());
        map.mapTo(fileLength);
        this.locks = new Locks(map, owner);
        this.journal = new Journal(map, locks, owner, ENTRIES_AT);
        locks.journal(journal);
        this.heap = new KeyHeap(this);
        this.table = new Table(this);
        refreshSegments();
        refreshHeapChunks();
        boolean recover = first && map.getIntVolatile(H_CLEAN) != 1;
        if (recover) {
          long boot = ProcessOwner.bootId();
          boolean sameBoot = boot != 0 && boot == map.getLongVolatile(H_BOOT);
          recoverExclusively(!sameBoot);
        }
        this.recovered = recover;
        if (first) {
          map.setLongVolatile(H_BOOT, ProcessOwner.bootId());
          map.setIntVolatile(H_CLEAN, 0);
          map.force(0, PAGE);
        }
        this.openers = ch.lock(OPENERS_LOCK_AT, 1, true);
      } finally {
        gate.release();
      }
    } catch (IOException | UncheckedIOException e) {
      closeQuietly(ch);
      throw new StoreException("cannot open the Tally store file " + path + ": " + e, e);
    } catch (RuntimeException e) {
      closeQuietly(ch);
      throw e;
    }
  }

  static ByteBuffer readHeader(FileChannel ch) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(PAGE).order(ByteOrder.LITTLE_ENDIAN);
    long pos = 0;
    while (b.hasRemaining()) {
      int n = ch.read(b, pos);
      if (n < 0) {
        break;
      }
      pos += n;
    }
    b.limit(b.position());
    return b;
  }

  /**
   * A file no store was ever created in: empty, or a creation cut short before the magic number
   * was written (the rest of the geometry is there and checks out).
   */
  private static boolean uninitialized(ByteBuffer h, long size) {
    if (size == 0) {
      return true;
    }
    if (h.limit() < PAGE || h.getLong(H_MAGIC) != 0) {
      return false;
    }
    return geometryCheck(h, MAGIC) == h.getLong(H_GEOMETRY_CHECK);
  }

  private static long geometryCheck(ByteBuffer h, long magic) {
    long[] words = new long[GEOMETRY_BYTES / 8];
    words[0] = magic;
    for (int i = 1; i < words.length; i++) {
      words[i] = h.getLong(i * 8);
    }
    return Hashing.words(words);
  }

  private void initialize(FileChannel ch, LocalOptions options) throws IOException {
    long seg0Bytes = options.segment0Slots() * SLOT;
    long heap0 = Layout.DEFAULT_HEAP0_BYTES;
    long length = REGIONS_AT + seg0Bytes + heap0;
    ch.truncate(0);
    ch.write(ByteBuffer.allocate(1), length - 1);
    ByteBuffer h = ByteBuffer.allocate(PAGE).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(H_VERSION, VERSION);
    h.putInt(H_PAGE, PAGE);
    h.putInt(H_SLOT, SLOT);
    h.putInt(H_STRIPES, STRIPES);
    h.putInt(H_ENTRIES, ENTRIES);
    h.putInt(H_ENTRY_SIZE, ENTRY_SIZE);
    h.putLong(H_SEGMENT0_SLOTS, options.segment0Slots());
    h.putLong(H_HEAP0_BYTES, heap0);
    h.putLong(H_STRIPES_AT, STRIPES_AT);
    h.putLong(H_ENTRIES_AT, ENTRIES_AT);
    h.putLong(H_GEOMETRY_CHECK, geometryCheck(h, MAGIC));
    h.putLong(H_FILE_LENGTH, length);
    h.putInt(H_SEGMENTS, 1);
    h.putInt(H_HEAP_CHUNKS, 1);
    h.putLong(H_HEAP_TOP, HEAP_START);
    h.putInt(H_CLEAN, 1);
    h.putLong(H_SEGMENT_AT, REGIONS_AT);
    h.putLong(H_HEAP_AT, REGIONS_AT + seg0Bytes);
    writeFully(ch, h, 0);
    ch.force(true);
    ByteBuffer magic = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, MAGIC);
    writeFully(ch, magic, H_MAGIC);
    ch.force(true);
  }

  private static void writeFully(FileChannel ch, ByteBuffer b, long at) throws IOException {
    b.clear();
    while (b.hasRemaining()) {
      at += ch.write(b, at);
    }
  }

  /** Checks the header and returns the file length it records; refuses anything not ours. */
  static long validate(Path path, ByteBuffer h, long size) {
    String what = "the file " + path;
    if (h.limit() < 8 || h.getLong(H_MAGIC) != MAGIC) {
      throw new StoreException(what + " is not a Tally store file (it does not start with the"
          + " Tally magic number); refusing to open it. Point the file: URI at a new path or at a"
          + " directory for Tally to create its store in");
    }
    if (h.limit() < H_VERSION + 4) {
      throw truncated(what, size, PAGE);
    }
    int version = h.getInt(H_VERSION);
    if (version > VERSION) {
      throw new StoreException(what + " was written by a newer version of Tally (store format "
          + version + "); this version reads format " + VERSION + " only. Upgrade tally-local");
    }
    if (h.limit() < PAGE) {
      throw truncated(what, size, PAGE);
    }
    if (version != VERSION || geometryCheck(h, MAGIC) != h.getLong(H_GEOMETRY_CHECK)
        || h.getInt(H_PAGE) != PAGE || h.getInt(H_SLOT) != SLOT || h.getInt(H_STRIPES) != STRIPES
        || h.getInt(H_ENTRIES) != ENTRIES || h.getInt(H_ENTRY_SIZE) != ENTRY_SIZE
        || h.getLong(H_STRIPES_AT) != STRIPES_AT || h.getLong(H_ENTRIES_AT) != ENTRIES_AT) {
      throw new StoreException(what + " has a corrupt Tally header (format version " + version
          + ", geometry checksum mismatch); refusing to open it");
    }
    long slots = h.getLong(H_SEGMENT0_SLOTS);
    long heap0 = h.getLong(H_HEAP0_BYTES);
    long length = h.getLong(H_FILE_LENGTH);
    int segs = h.getInt(H_SEGMENTS);
    int chunks = h.getInt(H_HEAP_CHUNKS);
    if (slots < SLOTS_PER_PAGE || Long.bitCount(slots) != 1 || heap0 < PAGE || (heap0 & (PAGE - 1)) != 0
        || segs < 1 || segs > MAX_SEGMENTS || chunks < 1 || chunks > MAX_HEAP_CHUNKS) {
      throw new StoreException(what + " has a corrupt Tally header (impossible geometry); refusing to open it");
    }
    if (length > size) {
      throw truncated(what, size, length);
    }
    return length;
  }

  private static StoreException truncated(String what, long size, long expected) {
    return new StoreException(what + " is truncated: it has " + size + " bytes but its header"
        + " needs " + expected + "; refusing to open it (restore it from a complete copy)");
  }

  private void closeFile() {
    try {
      FileLock gate = channel.lock(GATE_LOCK_AT, 1, false);
      try {
        openers.release();
        FileLock last = channel.tryLock(OPENERS_LOCK_AT, 1, false);
        if (last != null) {
          recoverDeadLeftovers();
          map.forceAll();
          map.setIntVolatile(H_CLEAN, 1);
          map.force(0, PAGE);
          last.release();
        }
      } finally {
        gate.release();
      }
    } catch (IOException | UncheckedIOException e) {
      // the next opener will find the file not marked clean and recover it
    } finally {
      closeQuietly(channel);
    }
  }

  private static void closeQuietly(FileChannel ch) {
    if (ch != null) {
      try {
        ch.close();
      } catch (IOException ignored) {
        // nothing to do
      }
    }
  }

  /** What dead processes left locked: their journal entries, insert stripes and growth lock. */
  void recoverDeadLeftovers() {
    journal.recoverDead();
    for (int i = 0; i <= STRIPES; i++) {
      long at = i == STRIPES ? H_GROW_LOCK : STRIPES_AT + i * 8L;
      long holder = map.getLongVolatile(at);
      if (holder != 0 && owner.isDead(holder)) {
        map.casLong(at, holder, 0);
      }
    }
  }

  // ---------------------------------------------------------------- recovery on open

  /**
   * Run by the only process with the file open when the last one did not close it. Every owner
   * recorded in the file is dead, so: journals are rolled back or forward, every lock and
   * reservation is cleared, claimed slots become tombstones and sealed live slots are unsealed.
   *
   * <p>If the machine may have crashed since ({@code verify}: the boot id changed or cannot be
   * read), pages may have reached the disk in any order and some not at all, so each live slot
   * is also verified: its checksum must match, its key record must hash to its key hash, and a
   * rate limiter's state record must be whole and carry its key's hash in its check word; a
   * slot must be reachable from its key's start slot without crossing an empty slot, and a key
   * may live in one slot only. Slots that fail become tombstones (their keys read as missing).
   * The key heap's free lists are dropped (their links may be torn), leaking freed records
   * rather than risking handing one out twice.
   */
  private void recoverExclusively(boolean verify) {
    journal.recoverAllExclusively(STRIPES_AT, STRIPES);
    map.setLongVolatile(H_GROW_LOCK, 0);
    int segs = segmentCount();
    for (int s = 0; s < segs; s++) {
      long base = segmentOffset(s);
      long slots = segmentSlots(s);
      for (long i = 0; i < slots; i++) {
        long slot = base + i * SLOT;
        if (!Table.isSlot(i)) {
          if (verify) {
            for (int b = 0; b < SLOT; b += 8) {
              map.setLong(slot + b, 0); // fingerprints: rebuilt below from the verified slots
            }
          }
          continue;
        }
        if (map.getLongVolatile(slot + S_LOCK) != 0) {
          locks.repairUnjournaled(slot);
          map.setLongVolatile(slot + S_LOCK, 0);
        }
        map.setIntVolatile(slot + S_WAITER, 0);
        long meta = map.getLongVolatile(slot + S_META);
        int state = Table.state(meta);
        if (state == RESERVED) {
          Table.writeMeta(map, slot, TOMBSTONE);
        } else if (state == LIVE) {
          if (verify && !verifySlot(slot)) {
            Table.writeMeta(map, slot, TOMBSTONE | ((int) meta & ~(Layout.STATE_BITS | Layout.RECORD)));
          } else if (map.getLongVolatile(slot + S_RAW) == SEALED) {
            long v = map.getLong(slot + S_HELD) ^ map.getLong(slot + S_MASK);
            if (v != SEALED) {
              map.setLongVolatile(slot + S_RAW, v);
            }
          }
        }
      }
    }
    if (verify) {
      rebuildFingerprintsAndDropDuplicates();
      heap.dropFreeLists();
    }
    map.forceAll();
  }

  private boolean verifySlot(long slot) {
    if (!Table.checksumOk(map, slot)) {
      return false;
    }
    byte[] key = heap.read(map.getInt(slot + S_KEY_REF));
    long keyHash = map.getLong(slot + S_KEY_HASH);
    if (key == null || Hashing.key(key, 0, key.length) != keyHash) {
      return false;
    }
    if (Table.record(map.getLongVolatile(slot + S_META))) {
      // a rate limiter: its state record must be whole, and be this key's
      long held = map.getLong(slot + S_HELD);
      if (map.getLong(slot + S_MASK) != (held ^ SEALED) || held >>> 32 != 0) {
        return false;
      }
      KeyHeap.State state = heap.readRecord((int) held, keyHash);
      return state != null && state.checked();
    }
    if (map.getLongVolatile(slot + S_RAW) == SEALED) {
      long v = map.getLong(slot + S_HELD) ^ map.getLong(slot + S_MASK);
      return v != SEALED;
    }
    return true;
  }

  /**
   * Rebuilds the fingerprints of every live slot, then drops every slot whose key is also in
   * an earlier slot (a delete and a re-insert of the same key whose pages reached the disk in
   * different orders): either copy was the key's value within the unsynced interval.
   */
  private void rebuildFingerprintsAndDropDuplicates() {
    int segs = segmentCount();
    for (int pass = 0; pass < 2; pass++) {
      for (int s = 0; s < segs; s++) {
        long base = segmentOffset(s);
        long slots = segmentSlots(s);
        for (long i = 0; i < slots; i++) {
          long slot = base + i * SLOT;
          long meta = map.getLongVolatile(slot + S_META);
          if (!Table.isSlot(i) || Table.state(meta) != LIVE) {
            continue;
          }
          if (pass == 0) {
            map.setByteVolatile(Table.fingerprintAt(slot), Table.fingerprint(map.getLong(slot + S_KEY_HASH)));
            continue;
          }
          byte[] bytes = heap.read(map.getInt(slot + S_KEY_REF));
          Table.Ref found = bytes == null ? null
              : table.find(Key.ofBytes(bytes)); // by bytes: an operation id's are not UTF-8
          if (found == null || found.slot() != slot) {
            Table.writeMeta(map, slot, TOMBSTONE | ((int) meta & ~(Layout.STATE_BITS | Layout.RECORD)));
            map.setByteVolatile(Table.fingerprintAt(slot), (byte) 0);
          }
        }
      }
    }
  }

  // ---------------------------------------------------------------- geometry

  int segmentCount() {
    int n = map.getIntVolatile(H_SEGMENTS);
    if (n > segments.length) {
      refreshSegments();
    }
    return n;
  }

  long segmentSlots(int s) {
    return segment0Slots << s;
  }

  long segmentOffset(int s) {
    long[] segs = segments;
    if (s >= segs.length) {
      segs = refreshSegments();
    }
    return segs[s];
  }

  /** Makes sure segment {@code s} exists, growing the table if it does not. */
  void ensureSegment(int s) {
    if (s >= segmentCount()) {
      grow(true, s);
    }
  }

  int heapChunkOf(long v) {
    return 63 - Long.numberOfLeadingZeros(v / heap0Bytes + 1);
  }

  long heapChunkBase(int c) {
    return heap0Bytes * ((1L << c) - 1);
  }

  /** The file offset of heap virtual offset {@code v}. */
  long heapAddress(long v) {
    int c = heapChunkOf(v);
    long[] chunks = heapChunks;
    if (c >= chunks.length) {
      chunks = refreshHeapChunks();
    }
    return chunks[c] + (v - heapChunkBase(c));
  }

  void ensureHeapChunk(int c) {
    if (c >= heapChunks.length && c >= refreshHeapChunks().length) {
      grow(false, c);
    }
  }

  /** Forces the page(s) of a key record; for sync=always. */
  void forceKey(int ref) {
    long at = heapAddress((ref & 0xFFFF_FFFFL) << 3);
    map.force(at, 8L + Math.max(0, map.getIntVolatile(at)));
  }

  private synchronized long[] refreshSegments() {
    int n = map.getIntVolatile(H_SEGMENTS);
    if (n <= segments.length) {
      return segments;
    }
    long[] s = new long[n];
    for (int i = 0; i < n; i++) {
      s[i] = map.getLongVolatile(H_SEGMENT_AT + i * 8L);
    }
    map.mapTo(map.getLongVolatile(H_FILE_LENGTH));
    segments = s;
    return s;
  }

  private synchronized long[] refreshHeapChunks() {
    int n = map.getIntVolatile(H_HEAP_CHUNKS);
    if (n <= heapChunks.length) {
      return heapChunks;
    }
    long[] c = new long[n];
    for (int i = 0; i < n; i++) {
      c[i] = map.getLongVolatile(H_HEAP_AT + i * 8L);
    }
    map.mapTo(map.getLongVolatile(H_FILE_LENGTH));
    heapChunks = c;
    return c;
  }

  private void grow(boolean segment, int target) {
    int countAt = segment ? H_SEGMENTS : H_HEAP_CHUNKS;
    int dirAt = segment ? H_SEGMENT_AT : H_HEAP_AT;
    int max = segment ? MAX_SEGMENTS : MAX_HEAP_CHUNKS;
    locks.lockWord(H_GROW_LOCK);
    try {
      int count = map.getIntVolatile(countAt);
      while (count <= target) {
        if (count >= max) {
          throw new StoreException("the Tally store file " + path + " is full (" + max
              + (segment ? " table segments" : " key heap chunks") + ")");
        }
        long size = segment ? (segment0Slots << count) * SLOT : heap0Bytes << count;
        long at = Layout.pageAlign(map.getLongVolatile(H_FILE_LENGTH));
        extend(at + size);
        map.setLongVolatile(H_FILE_LENGTH, at + size);
        map.setLongVolatile(dirAt + count * 8L, at);
        count++;
        map.setIntVolatile(countAt, count);
      }
    } finally {
      locks.unlockWord(H_GROW_LOCK);
    }
    if (segment) {
      refreshSegments();
    } else {
      refreshHeapChunks();
    }
  }

  private void extend(long length) {
    try {
      if (channel.size() < length) {
        channel.write(ByteBuffer.allocate(1), length - 1);
      }
      channel.force(true);
    } catch (IOException e) {
      throw new StoreException("cannot grow the Tally store file " + path + " to " + length
          + " bytes: " + e, e);
    }
  }

  @Override
  public String toString() {
    return "StoreFile[" + path + "]";
  }
}
