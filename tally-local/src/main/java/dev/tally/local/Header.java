package dev.tally.local;

import static dev.tally.local.Layout.ENTRIES;
import static dev.tally.local.Layout.ENTRIES_AT;
import static dev.tally.local.Layout.ENTRY_SIZE;
import static dev.tally.local.Layout.GEOMETRY_BYTES;
import static dev.tally.local.Layout.HEAP_START;
import static dev.tally.local.Layout.H_CLEAN;
import static dev.tally.local.Layout.H_DIRECTORY_CHECK;
import static dev.tally.local.Layout.H_ENTRIES;
import static dev.tally.local.Layout.H_ENTRIES_AT;
import static dev.tally.local.Layout.H_ENTRY_SIZE;
import static dev.tally.local.Layout.H_FILE_LENGTH;
import static dev.tally.local.Layout.H_GEOMETRY_CHECK;
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
import static dev.tally.local.Layout.MAGIC;
import static dev.tally.local.Layout.MAX_HEAP_CHUNKS;
import static dev.tally.local.Layout.MAX_SEGMENTS;
import static dev.tally.local.Layout.PAGE;
import static dev.tally.local.Layout.REGIONS_AT;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.SLOTS_PER_PAGE;
import static dev.tally.local.Layout.STRIPES;
import static dev.tally.local.Layout.STRIPES_AT;
import static dev.tally.local.Layout.VERSION;

import dev.tally.StoreException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * The header page, read as bytes: what makes a file a Tally store, and the checks every
 * structural field passes before anything trusts it.
 *
 * <p>Two checksums cover the header. The geometry (bytes 0 to 63) never changes after creation.
 * The directory (file length, segment and heap chunk counts, every published region offset)
 * changes only under the growth lock, which writes the fields and then their checksum, so a
 * reader that meets a mismatch while a grower is at work reads again once it is done; a
 * mismatch that stays is damage. On top of the checksums, every region must be page-aligned,
 * past the fixed regions, inside the file and clear of every other region: a damaged directory
 * is refused before a single offset from it is used. The heap top and the free lists change
 * without a lock, so they carry checks of their own ({@link KeyHeap}).
 */
final class Header {
  private Header() {}

  /** Reads the header page (or as much of it as the file has) through the channel. */
  static ByteBuffer read(FileChannel ch) throws IOException {
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

  /** Copies the header page out of the mapping (not atomically: see {@link #directory}). */
  static ByteBuffer copy(FileMap map) {
    byte[] bytes = new byte[PAGE];
    map.getBytes(0, bytes, 0, PAGE);
    return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** The header of a new store of {@code length} bytes: one segment, one heap chunk. */
  static ByteBuffer initial(long segment0Slots, long heap0, long length) {
    ByteBuffer h = ByteBuffer.allocate(PAGE).order(ByteOrder.LITTLE_ENDIAN);
    h.putLong(H_MAGIC, MAGIC);
    h.putInt(H_VERSION, VERSION);
    h.putInt(H_PAGE, PAGE);
    h.putInt(H_SLOT, SLOT);
    h.putInt(H_STRIPES, STRIPES);
    h.putInt(H_ENTRIES, ENTRIES);
    h.putInt(H_ENTRY_SIZE, ENTRY_SIZE);
    h.putLong(H_SEGMENT0_SLOTS, segment0Slots);
    h.putLong(H_HEAP0_BYTES, heap0);
    h.putLong(H_STRIPES_AT, STRIPES_AT);
    h.putLong(H_ENTRIES_AT, ENTRIES_AT);
    h.putLong(H_GEOMETRY_CHECK, geometryCheck(h));
    h.putLong(H_FILE_LENGTH, length);
    h.putInt(H_SEGMENTS, 1);
    h.putInt(H_HEAP_CHUNKS, 1);
    h.putLong(H_HEAP_TOP, KeyHeap.topWord(HEAP_START));
    h.putInt(H_CLEAN, 1);
    h.putLong(H_SEGMENT_AT, REGIONS_AT);
    h.putLong(H_HEAP_AT, REGIONS_AT + segment0Slots * SLOT);
    h.putLong(H_DIRECTORY_CHECK, directoryCheck(h));
    return h;
  }

  static long geometryCheck(ByteBuffer h) {
    long[] words = new long[GEOMETRY_BYTES / 8];
    for (int i = 0; i < words.length; i++) {
      words[i] = h.getLong(i * 8);
    }
    return Hashing.words(words);
  }

  /** The checksum of the directory, over the counts as they stand (clamped to the maximum). */
  static long directoryCheck(ByteBuffer h) {
    int segs = Math.min(Math.max(h.getInt(H_SEGMENTS), 0), MAX_SEGMENTS);
    int chunks = Math.min(Math.max(h.getInt(H_HEAP_CHUNKS), 0), MAX_HEAP_CHUNKS);
    long[] words = new long[2 + segs + chunks];
    words[0] = h.getLong(H_FILE_LENGTH);
    words[1] = (h.getInt(H_SEGMENTS) & 0xFFFF_FFFFL) | ((long) h.getInt(H_HEAP_CHUNKS) << 32);
    for (int i = 0; i < segs; i++) {
      words[2 + i] = h.getLong(H_SEGMENT_AT + i * 8);
    }
    for (int i = 0; i < chunks; i++) {
      words[2 + segs + i] = h.getLong(H_HEAP_AT + i * 8);
    }
    return Hashing.words(words) ^ 0x510E527FADE682D1L;
  }

  /**
   * Checks what never changes: magic number, version, geometry and its checksum, and that the
   * file can hold its fixed regions. Refuses anything not ours with a {@link StoreException}.
   */
  static void validateGeometry(Path path, ByteBuffer h, long size) {
    String what = "the file " + path;
    if (size == 0) {
      throw new StoreException(what + " is empty. A Tally store file never is (it is created whole"
          + " under another name, then put in place), so this is not taken for a store with no"
          + " counters: refusing to open it. Restore it from a copy, or remove it to start a new"
          + " store");
    }
    if (h.limit() < 8 || h.getLong(H_MAGIC) != MAGIC) {
      if (h.limit() >= PAGE && h.getLong(H_MAGIC) == 0 && h.getInt(H_VERSION) == VERSION) {
        throw new StoreException(what + " has a damaged Tally header (its magic number is zero);"
            + " refusing to open it");
      }
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
    if (version != VERSION || geometryCheck(h) != h.getLong(H_GEOMETRY_CHECK)
        || h.getInt(H_PAGE) != PAGE || h.getInt(H_SLOT) != SLOT || h.getInt(H_STRIPES) != STRIPES
        || h.getInt(H_ENTRIES) != ENTRIES || h.getInt(H_ENTRY_SIZE) != ENTRY_SIZE
        || h.getLong(H_STRIPES_AT) != STRIPES_AT || h.getLong(H_ENTRIES_AT) != ENTRIES_AT) {
      throw new StoreException(what + " has a corrupt Tally header (format version " + version
          + ", geometry checksum mismatch); refusing to open it");
    }
    long slots = h.getLong(H_SEGMENT0_SLOTS);
    long heap0 = h.getLong(H_HEAP0_BYTES);
    if (slots < SLOTS_PER_PAGE || Long.bitCount(slots) != 1 || slots > (1L << 32)
        || heap0 < PAGE || (heap0 & (PAGE - 1)) != 0 || heap0 > (1L << 32)) {
      throw new StoreException(what + " has a corrupt Tally header (impossible geometry); refusing to open it");
    }
    if (size < REGIONS_AT) {
      throw truncated(what, size, REGIONS_AT);
    }
  }

  /** The directory: the file length and where each segment and heap chunk starts. */
  record Directory(long fileLength, long[] segments, long[] heapChunks) {}

  /**
   * The directory of a header whose geometry passed {@link #validateGeometry}, or null with the
   * reason in {@code why[0]} if it fails its checksum or names a region that cannot be.
   */
  static Directory directory(ByteBuffer h, long size, String[] why) {
    if (directoryCheck(h) != h.getLong(H_DIRECTORY_CHECK)) {
      why[0] = "directory checksum mismatch (header offsets " + H_FILE_LENGTH + " to "
          + (H_HEAP_AT + MAX_HEAP_CHUNKS * 8) + ")";
      return null;
    }
    long length = h.getLong(H_FILE_LENGTH);
    int segs = h.getInt(H_SEGMENTS);
    int chunks = h.getInt(H_HEAP_CHUNKS);
    if (segs < 1 || segs > MAX_SEGMENTS || chunks < 1 || chunks > MAX_HEAP_CHUNKS || length < REGIONS_AT) {
      why[0] = "impossible directory (" + segs + " segments, " + chunks + " heap chunks, "
          + length + " bytes)";
      return null;
    }
    if (length > size) {
      why[0] = "truncated: it has " + size + " bytes but its header needs " + length;
      return null;
    }
    long slots = h.getLong(H_SEGMENT0_SLOTS);
    long heap0 = h.getLong(H_HEAP0_BYTES);
    long[] starts = new long[segs + chunks];
    long[] sizes = new long[segs + chunks];
    long[] segments = new long[segs];
    long[] heapChunks = new long[chunks];
    for (int i = 0; i < segs + chunks; i++) {
      boolean segment = i < segs;
      int n = segment ? i : i - segs;
      long unit = segment ? slots * SLOT : heap0;
      long at = h.getLong((segment ? H_SEGMENT_AT : H_HEAP_AT) + n * 8);
      long bytes = n < Long.numberOfLeadingZeros(unit) - 1 ? unit << n : -1;
      if (bytes < 0 || at < REGIONS_AT || (at & (PAGE - 1)) != 0 || at > length || bytes > length - at) {
        why[0] = (segment ? "segment " : "heap chunk ") + n + " at " + at + " lies outside the file";
        return null;
      }
      for (int j = 0; j < i; j++) {
        if (at < starts[j] + sizes[j] && starts[j] < at + bytes) {
          why[0] = (segment ? "segment " : "heap chunk ") + n + " at " + at + " overlaps another region";
          return null;
        }
      }
      starts[i] = at;
      sizes[i] = bytes;
      if (segment) {
        segments[n] = at;
      } else {
        heapChunks[n] = at;
      }
    }
    return new Directory(length, segments, heapChunks);
  }

  /** A {@link StoreException} for a directory that failed, naming the file and the reason. */
  static StoreException damaged(Path path, String why) {
    if (why.startsWith("truncated")) {
      return new StoreException("the file " + path + " is " + why + "; refusing to open it"
          + " (restore it from a complete copy)");
    }
    return new StoreException("the file " + path + " has a corrupt Tally header: " + why
        + "; refusing to use it (restore it from a copy)");
  }

  private static StoreException truncated(String what, long size, long expected) {
    return new StoreException(what + " is truncated: it has " + size + " bytes but its header"
        + " needs " + expected + "; refusing to open it (restore it from a complete copy)");
  }
}
