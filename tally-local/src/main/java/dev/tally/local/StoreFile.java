package dev.tally.local;

import static dev.tally.local.Layout.ENTRIES_AT;
import static dev.tally.local.Layout.GATE_LOCK_AT;
import static dev.tally.local.Layout.H_BOOT;
import static dev.tally.local.Layout.H_CLEAN;
import static dev.tally.local.Layout.H_DIRECTORY_CHECK;
import static dev.tally.local.Layout.H_FILE_LENGTH;
import static dev.tally.local.Layout.H_GROW_LOCK;
import static dev.tally.local.Layout.H_HEAP0_BYTES;
import static dev.tally.local.Layout.H_HEAP_AT;
import static dev.tally.local.Layout.H_HEAP_CHUNKS;
import static dev.tally.local.Layout.H_SEGMENT0_SLOTS;
import static dev.tally.local.Layout.H_SEGMENTS;
import static dev.tally.local.Layout.H_SEGMENT_AT;
import static dev.tally.local.Layout.LIVE;
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

import dev.tally.StoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.DirectoryStream;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLongArray;

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
 * The header starts with a magic number and a format version; the geometry that follows and the
 * directory of regions are checksummed and checked against the file ({@link Header}). A file
 * that fails any of these, or is empty or short, is refused with a {@link StoreException}
 * saying why, and is never written to. A new file is written whole under a name of its own and
 * only then linked into place ({@link #create}), so an empty or half-made store file is never
 * Tally's own doing, and is never taken for a new store.
 *
 * <h2>Growth</h2>
 *
 * Segments and heap chunks are appended under the growth lock: write zeros over the new region
 * (so the file system allocates it now and a full one says so here, not by a fault on the
 * mapping), force it to the device (so the header never points past the end of the file, even
 * after a crash of the machine), then publish the region's offset, the count and the directory
 * checksum in the header. Other processes check the directory and map new regions when they
 * first see the larger count. Nothing is copied or moved, so growth stops nobody: lookups and
 * increments go on in the existing segments meanwhile.
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
  private final LocalOptions.Sync sync;
  private volatile long[] segments = new long[0];
  private volatile long[] heapChunks = new long[0];
  private volatile AtomicLongArray[] audited = new AtomicLongArray[0];
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
        createDirectories(parent, options.directoryPermissions());
      }
      if (!Files.exists(path)) {
        create(path, options);
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

  /** Creates the missing directories of {@code dir}, each with exactly {@code permissions}. */
  private static void createDirectories(Path dir, Set<PosixFilePermission> permissions) throws IOException {
    if (Files.isDirectory(dir)) {
      return;
    }
    Path parent = dir.getParent();
    if (parent != null) {
      createDirectories(parent, permissions);
    }
    try {
      if (posix(dir)) {
        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(permissions));
      } else {
        Files.createDirectory(dir);
      }
    } catch (FileAlreadyExistsException e) {
      return; // made meanwhile by someone else, with their permissions
    }
    setPermissions(dir, permissions);
  }

  private static boolean posix(Path p) {
    return p.getFileSystem().supportedFileAttributeViews().contains("posix");
  }

  private static void setPermissions(Path p, Set<PosixFilePermission> permissions) throws IOException {
    try {
      Files.setPosixFilePermissions(p, permissions); // exactly these, whatever the umask
    } catch (UnsupportedOperationException e) {
      // not a POSIX file system: its own defaults apply
    }
  }

  /**
   * Creates a new store file whole, under a name of its own, and only then links it into place,
   * so nobody ever sees a store file that is empty or half made: an empty or short file at the
   * store's path is damage, and refused. Every byte is written (reserved) before the file
   * appears, so a full file system fails here, with nothing acknowledged, rather than on a
   * later write to the mapping.
   */
  private static void create(Path path, LocalOptions options) throws IOException {
    String prefix = path.getFileName() + ".creating-";
    removeAbandonedCreations(path, prefix);
    Path tmp = path.resolveSibling(prefix + ProcessHandle.current().pid() + "-"
        + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    try {
      Set<StandardOpenOption> create = EnumSet.of(StandardOpenOption.CREATE_NEW,
          StandardOpenOption.READ, StandardOpenOption.WRITE);
      try (FileChannel ch = posix(tmp)
          ? FileChannel.open(tmp, create, PosixFilePermissions.asFileAttribute(options.filePermissions()))
          : FileChannel.open(tmp, create)) {
        setPermissions(tmp, options.filePermissions());
        long seg0Bytes = options.segment0Slots() * SLOT;
        long length = REGIONS_AT + seg0Bytes + Layout.DEFAULT_HEAP0_BYTES;
        writeZeros(ch, 0, length);
        writeFully(ch, Header.initial(options.segment0Slots(), Layout.DEFAULT_HEAP0_BYTES, length), 0);
        ch.force(true);
      }
      try {
        Files.createLink(path, tmp); // fails if the store appeared meanwhile: then it is the store
      } catch (FileAlreadyExistsException e) {
        // another process created it first
      } catch (UnsupportedOperationException | IOException e) {
        if (!Files.exists(path)) { // no hard links here: a plain rename, which never replaces
          try {
            Files.move(tmp, path);
          } catch (FileAlreadyExistsException again) {
            // another process created it first
          }
        }
      }
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /** Deletes what creators that died left: their files are named after their pid. */
  private static void removeAbandonedCreations(Path path, String prefix) {
    Path dir = path.toAbsolutePath().getParent();
    if (dir == null) {
      return;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, glob(prefix) + "*")) {
      for (Path f : files) {
        String rest = f.getFileName().toString().substring(prefix.length());
        int dash = rest.indexOf('-');
        try {
          long pid = Long.parseLong(dash < 0 ? rest : rest.substring(0, dash));
          if (ProcessHandle.of(pid).isEmpty()) {
            Files.deleteIfExists(f);
          }
        } catch (NumberFormatException | IOException e) {
          // not ours, or gone already
        }
      }
    } catch (IOException | RuntimeException e) {
      // best effort: an abandoned creation only takes space
    }
  }

  private static String glob(String literal) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < literal.length(); i++) {
      char c = literal.charAt(i);
      if ("*?[]{}\\".indexOf(c) >= 0) {
        b.append('\\');
      }
      b.append(c);
    }
    return b.toString();
  }

  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20);

  /**
   * Writes zeros over {@code [at, at + length)}: the file system allocates the blocks now, so
   * a full one says so here (an {@code IOException}) rather than by a fault on a later write to
   * the mapping (SIGBUS, which the JVM reports as an {@code InternalError}, asynchronously).
   */
  private static void writeZeros(FileChannel ch, long at, long length) throws IOException {
    long end = at + length;
    while (at < end) {
      ByteBuffer b = ZEROS.duplicate();
      b.limit((int) Math.min(b.capacity(), end - at));
      while (b.hasRemaining()) {
        at += ch.write(b, at);
      }
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
    this.sync = options.sync();
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
        ByteBuffer header = Header.read(ch);
        Header.validateGeometry(path, header, ch.size());
        this.segment0Slots = header.getLong(H_SEGMENT0_SLOTS);
        this.heap0Bytes = header.getLong(H_HEAP0_BYTES);
        this.map = new FileMap(ch, options.windowShift());
        map.mapTo(REGIONS_AT);
        this.locks = new Locks(map, owner);
        this.journal = new Journal(map, locks, owner, ENTRIES_AT);
        locks.journal(journal);
        this.heap = new KeyHeap(this);
        this.table = new Table(this);
        refreshDirectory();
        if (first && heap.repairTop(heapChunkBase(heapChunks.length))) {
          LOG.log(System.Logger.Level.WARNING, "the key heap top of " + path + " was damaged; moved"
              + " past every record in use (the rest of its chunk is left unused)");
        }
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

  private static final System.Logger LOG = System.getLogger("dev.tally.local");

  private static void writeFully(FileChannel ch, ByteBuffer b, long at) throws IOException {
    b.clear();
    while (b.hasRemaining()) {
      at += ch.write(b, at);
    }
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
    } catch (IOException | UncheckedIOException | StoreException e) {
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
    long dropped = 0;
    long firstDropped = 0;
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
            if (dropped++ == 0) {
              firstDropped = slot;
            }
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
    if (dropped > 0) {
      LOG.log(System.Logger.Level.WARNING, "recovering " + path + " after a crash of the machine: "
          + dropped + " slot(s) reached the disk torn and were dropped (their keys read as missing),"
          + " the first at offset " + firstDropped);
    }
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
              : table.find(new Key(new String(bytes, java.nio.charset.StandardCharsets.UTF_8)));
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
      refreshDirectory();
    }
    return Math.min(n, segments.length);
  }

  long segmentSlots(int s) {
    return segment0Slots << s;
  }

  long segmentOffset(int s) {
    long[] segs = segments;
    if (s >= segs.length) {
      refreshDirectory();
      segs = segments;
      if (s >= segs.length) {
        throw new StoreException("the Tally store file " + path + " has no segment " + s
            + " (it has " + segs.length + ")");
      }
    }
    return segs[s];
  }

  /** The slots of segment {@code s} this process has found sound, one bit per slot ({@link Table#audit}). */
  AtomicLongArray audited(int s) {
    AtomicLongArray[] a = audited;
    if (s >= a.length) {
      refreshDirectory();
      a = audited;
    }
    return a[s];
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
      refreshDirectory();
      chunks = heapChunks;
      if (c >= chunks.length) {
        throw new StoreException("the Tally store file " + path + " is damaged: key heap offset "
            + v + " lies past its " + chunks.length + " chunk(s)");
      }
    }
    return chunks[c] + (v - heapChunkBase(c));
  }

  void ensureHeapChunk(int c) {
    if (c >= heapChunks.length) {
      refreshDirectory();
      if (c >= heapChunks.length) {
        grow(false, c);
      }
    }
  }

  /** Forces the page(s) of a key record; for sync=always. */
  void forceKey(int ref) {
    long at = heapAddress((ref & 0xFFFF_FFFFL) << 3);
    map.force(at, 8L + Math.max(0, map.getIntVolatile(at)));
  }

  /**
   * Reads the directory afresh if it has grown, and maps what it adds. The directory is checked
   * first ({@link Header}); a mismatch met while a grower may be writing it is read again under
   * the growth lock, and one that stays is refused.
   */
  private synchronized void refreshDirectory() {
    if (segments.length > 0 && map.getIntVolatile(H_SEGMENTS) == segments.length
        && map.getIntVolatile(H_HEAP_CHUNKS) == heapChunks.length) {
      return;
    }
    String[] why = new String[1];
    Header.Directory d = Header.directory(Header.copy(map), size(), why);
    if (d == null) {
      locks.lockWord(H_GROW_LOCK);
      try {
        d = Header.directory(Header.copy(map), size(), why);
      } finally {
        locks.unlockWord(H_GROW_LOCK);
      }
    }
    if (d == null) {
      throw Header.damaged(path, why[0]);
    }
    if (d.segments().length < segments.length || d.heapChunks().length < heapChunks.length) {
      throw Header.damaged(path, "the directory lists fewer regions than before");
    }
    map.mapTo(d.fileLength());
    AtomicLongArray[] a = java.util.Arrays.copyOf(audited, d.segments().length);
    for (int s = audited.length; s < a.length; s++) {
      a[s] = new AtomicLongArray((int) Math.max(1, segmentSlots(s) / SLOTS_PER_PAGE));
    }
    audited = a;
    heapChunks = d.heapChunks();
    segments = d.segments();
  }

  private long size() {
    try {
      return channel.size();
    } catch (IOException e) {
      throw new StoreException("cannot read the size of the Tally store file " + path + ": " + e, e);
    }
  }

  /**
   * Appends segments or heap chunks until {@code target} exists. Each region's bytes are written
   * (zeros) and forced before the header names it, so no write to the mapping can fault on a
   * full file system. A failure to grow is a {@link StoreException} raised before the caller has
   * changed anything; the file is cut back to what the header names, freeing what was reserved.
   */
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
        long length = map.getLongVolatile(H_FILE_LENGTH);
        long at = Layout.pageAlign(length);
        reserve(at, size);
        map.setLongVolatile(H_FILE_LENGTH, at + size);
        map.setLongVolatile(dirAt + count * 8L, at);
        count++;
        map.setIntVolatile(countAt, count);
        map.setLongVolatile(H_DIRECTORY_CHECK, Header.directoryCheck(Header.copy(map)));
        if (sync == LocalOptions.Sync.ALWAYS) {
          map.force(0, PAGE);
        }
      }
    } finally {
      locks.unlockWord(H_GROW_LOCK);
    }
    refreshDirectory();
  }

  private void reserve(long at, long size) {
    try {
      writeZeros(channel, at, size);
      channel.force(true);
    } catch (IOException e) {
      try {
        channel.truncate(at); // give back what was reserved: nobody maps past the header's length
      } catch (IOException ignored) {
        // the next growth writes the same bytes again
      }
      throw new StoreException("cannot grow the Tally store file " + path + " by " + size
          + " bytes (to " + (at + size) + "): " + e.getMessage() + ". Nothing was changed; free"
          + " space on its file system, or use fewer or shorter keys", e);
    }
  }

  @Override
  public String toString() {
    return "StoreFile[" + path + "]";
  }
}
