package dev.tally.local;

/**
 * The store file, format version 1: every offset and constant, next to the picture of the bytes.
 * All integers are little-endian; every multi-byte field is naturally aligned, so the 8-byte
 * words that processes race on are single atomic memory accesses.
 *
 * <pre>
 * file offset
 * 0          +------------------------------------------------------------+
 *            | header page (4 KiB)                                        |
 *            |   0  magic "TALLYCNT"    8 version   12 page size  16 slot   |
 *            |  20  stripe count       24 entry count  28 entry size      |
 *            |  32  slots in segment 0 40 bytes in heap chunk 0            |
 *            |  48  stripes at         56 entries at                      |
 *            |  64  geometry checksum (over bytes 0..63)                  |
 *            | 128  file length       136 segment count 140 heap chunks   |
 *            | 144  heap top (top / 8 | check &lt;&lt; 32)  152 clean shutdown   |
 *            | 160  boot id           168 grow lock (owner word)          |
 *            | 176  directory checksum (file length, counts, offsets)     |
 *            | 192  segment offsets [40]   512 heap chunk offsets [40]     |
 *            | 832  key heap free lists [16] (ref | tag &lt;&lt; 32)           |
 *            | 4000 byte-range lock: open/close gate; 4001: openers        |
 * 4096       +------------------------------------------------------------+
 *            | insert stripes: 4096 x u64 owner words (32 KiB)            |
 * 36864      +------------------------------------------------------------+
 *            | journal entries: 256 x 16 KiB                              |
 *            |   0 owner  8 claim  16 image count  20 state  24 pending   |
 *            |   64.. 255 slot images of 64 bytes (word 0: slot offset)   |
 * 4231168    +------------------------------------------------------------+
 *            | regions, appended as the store grows, each page-aligned:   |
 *            |   segment n: (slots in segment 0 &lt;&lt; n) cells of 64 bytes:   |
 *            |     pages of 64 cells; cell 0 = 64 fingerprint bytes, one  |
 *            |     per cell (byte 0 unused), cells 1..63 = slots          |
 *            |   heap chunk n: (bytes in heap chunk 0 &lt;&lt; n) bytes          |
 *            +------------------------------------------------------------+
 *
 * fingerprint byte of slot i: 0 if free, else 0x80 | (key hash &gt;&gt;&gt; 57)
 *
 * slot (64 bytes, one cache line, 63 to a page, never across a page)
 *  0 lock     owner word: pid | start token &lt;&lt; 32; 0 when free
 *  8 raw      value XOR mask while live and unlocked; SEALED while locked or dead
 * 16 held     the plain value, written by whoever seals the slot
 * 24 mask     random, new for each incarnation of the slot
 * 32 expiry   TimeSource nanos; 0 = never
 * 40 key hash 64-bit hash of the key's UTF-8 bytes
 * 48 key ref  u32: key record offset in the key heap / 8
 * 52 waiter   u32: the waiter next in line (entry + 1) &lt;&lt; 20 | milliseconds
 * 56 meta     u32 flags (state: 2 bits, floating: 1 bit, record: 1 bit) | u32 checksum &lt;&lt; 32
 *             the checksum covers mask, expiry, key hash, key ref and flags
 *
 * key record (in the key heap, 8-aligned, sized by class): u32 length, u32 class, bytes
 *   a freed record: u32 link to the next free record (ref), u32 class | FREE
 *
 * a rate limiter's slot (flag RECORD): held = the reference of its state record in the key
 * heap, mask = held ^ SEALED, so raw (= held ^ mask) is SEALED for good and every lock-free
 * path leaves the slot to the locked one; expiry = when the limiter is full again
 *
 * state record (in the key heap, copy-on-write: never changed once a slot points at it)
 *  0 u32 length (16 + 8 n)   4 u32 size class
 *  8 last now: the latest time a decision on this state was taken at (never moves back)
 * 16 check: hash of the key hash, last now and the n words
 * 24 the machine's n words (6 per limit)
 * </pre>
 */
final class Layout {
  private Layout() {}

  static final long MAGIC = 0x544E43594C4C4154L; // "TALLYCNT" read as a little-endian long
  static final int VERSION = 1;
  static final int PAGE = 4096;
  static final int SLOT = 64;
  /** Cells per page: cell 0 holds the page's fingerprints, cells 1..63 are slots. */
  static final int SLOTS_PER_PAGE = PAGE / SLOT;

  // ---------------------------------------------------------------- header
  static final int H_MAGIC = 0;
  static final int H_VERSION = 8;
  static final int H_PAGE = 12;
  static final int H_SLOT = 16;
  static final int H_STRIPES = 20;
  static final int H_ENTRIES = 24;
  static final int H_ENTRY_SIZE = 28;
  static final int H_SEGMENT0_SLOTS = 32;
  static final int H_HEAP0_BYTES = 40;
  static final int H_STRIPES_AT = 48;
  static final int H_ENTRIES_AT = 56;
  static final int H_GEOMETRY_CHECK = 64;
  static final int GEOMETRY_BYTES = 64;

  static final int H_FILE_LENGTH = 128;
  static final int H_SEGMENTS = 136;
  static final int H_HEAP_CHUNKS = 140;
  static final int H_HEAP_TOP = 144;
  static final int H_CLEAN = 152;
  static final int H_BOOT = 160;
  static final int H_GROW_LOCK = 168;
  /**
   * The checksum of the directory: file length, segment and heap chunk counts and every
   * published offset. Written under the growth lock after the fields it covers.
   */
  static final int H_DIRECTORY_CHECK = 176;
  static final int H_SEGMENT_AT = 192;
  static final int MAX_SEGMENTS = 40;
  static final int H_HEAP_AT = 512;
  static final int MAX_HEAP_CHUNKS = 40;
  static final int H_FREE_LISTS = 832;

  /** Byte-range locks (not data): the gate serializes open and close, openers share the next. */
  static final long GATE_LOCK_AT = 4000;
  static final long OPENERS_LOCK_AT = 4001;

  // ---------------------------------------------------------------- fixed regions
  static final int STRIPES = 4096;
  static final long STRIPES_AT = PAGE;
  static final int ENTRIES = 256;
  static final int ENTRY_SIZE = 16384;
  static final int ENTRY_IMAGES = ENTRY_SIZE / SLOT - 1;
  static final long ENTRIES_AT = STRIPES_AT + STRIPES * 8L;
  static final long REGIONS_AT = ENTRIES_AT + (long) ENTRIES * ENTRY_SIZE;

  static final int E_OWNER = 0;
  static final int E_CLAIM = 8;
  static final int E_COUNT = 16;
  static final int E_STATE = 20;
  static final int E_PENDING = 24;
  static final int E_IMAGES = 64;
  static final int OPEN = 0;
  static final int COMMITTED = 1;

  // ---------------------------------------------------------------- slots
  static final int S_LOCK = 0;
  static final int S_RAW = 8;
  static final int S_HELD = 16;
  static final int S_MASK = 24;
  static final int S_EXPIRY = 32;
  static final int S_KEY_HASH = 40;
  static final int S_KEY_REF = 48;
  static final int S_WAITER = 52;
  static final int S_META = 56;

  static final int EMPTY = 0;
  static final int LIVE = 1;
  static final int TOMBSTONE = 2;
  static final int RESERVED = 3;
  static final int STATE_BITS = 3;
  static final int FLOATING = 4;
  /** A rate limiter's slot: {@code held} names its state record (see the picture). */
  static final int RECORD = 8;

  /** The raw word of a slot that a lock holder has frozen, or that holds no live value. */
  static final long SEALED = 0x5EA1ED5EA1ED5EA1L;

  // ---------------------------------------------------------------- key heap
  /** Record sizes: 8 bytes of header, then the key, rounded up to one of these. */
  static final int[] SIZE_CLASSES = {16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1032};
  /** The first record offset: 0 means "no record". */
  static final long HEAP_START = 16;
  /** Key refs are u32 multiples of 8, so the heap is at most 32 GiB. */
  static final long HEAP_LIMIT = 0xFFFF_FFFFL << 3;
  /** Set in the class word of a record on a free list, so a damaged link is never followed into a live record. */
  static final int FREE = 0x8000_0000;

  static final int R_LAST_NOW = 8;
  static final int R_CHECK = 16;
  static final int R_WORDS = 24;
  /** The most words a state record holds: the largest size class, less its three header words. */
  static final int MAX_RECORD_WORDS = (1032 - R_WORDS) / 8;

  // ---------------------------------------------------------------- defaults
  static final long DEFAULT_SEGMENT0_SLOTS = 16_384; // 1 MiB
  static final long DEFAULT_HEAP0_BYTES = 256 * 1024;

  static int sizeClass(int keyLength) {
    int need = 8 + keyLength;
    for (int c = 0; c < SIZE_CLASSES.length; c++) {
      if (SIZE_CLASSES[c] >= need) {
        return c;
      }
    }
    throw new IllegalArgumentException("key of " + keyLength + " bytes is longer than the file store holds");
  }

  static long pageAlign(long n) {
    return (n + PAGE - 1) & -PAGE;
  }
}
