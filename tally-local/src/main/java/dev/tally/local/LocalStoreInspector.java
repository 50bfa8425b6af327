package dev.tally.local;

import static dev.tally.local.Layout.COMMITTED;
import static dev.tally.local.Layout.EMPTY;
import static dev.tally.local.Layout.ENTRIES;
import static dev.tally.local.Layout.ENTRIES_AT;
import static dev.tally.local.Layout.ENTRY_IMAGES;
import static dev.tally.local.Layout.ENTRY_SIZE;
import static dev.tally.local.Layout.E_CLAIM;
import static dev.tally.local.Layout.E_COUNT;
import static dev.tally.local.Layout.E_OWNER;
import static dev.tally.local.Layout.E_STATE;
import static dev.tally.local.Layout.H_BOOT;
import static dev.tally.local.Layout.H_CLEAN;
import static dev.tally.local.Layout.H_GROW_LOCK;
import static dev.tally.local.Layout.H_HEAP0_BYTES;
import static dev.tally.local.Layout.H_HEAP_TOP;
import static dev.tally.local.Layout.H_SEGMENT0_SLOTS;
import static dev.tally.local.Layout.H_VERSION;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.RESERVED;
import static dev.tally.local.Layout.R_CHECK;
import static dev.tally.local.Layout.R_LAST_NOW;
import static dev.tally.local.Layout.R_WORDS;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SIZE_CLASSES;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.SLOTS_PER_PAGE;
import static dev.tally.local.Layout.STRIPES;
import static dev.tally.local.Layout.STRIPES_AT;
import static dev.tally.local.Layout.S_EXPIRY;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_KEY_HASH;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;
import static dev.tally.local.Layout.TOMBSTONE;

import dev.tally.Limit;
import dev.tally.StoreException;
import dev.tally.TimeSource;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * Reads a {@code file:} store without opening it as a store, for people and for the
 * {@code tally} command: {@link #dump} prints the header, the geometry, slot counts and the keys
 * with their values, limiter states and expiries; {@link #verify} checks every checksum, key
 * record and limiter record, and says what is wrong.
 *
 * <p>It maps the file read-only, takes no lock and recovers nothing, so it may look at a store
 * that processes are using (it then sees a moment of it; slots locked at that moment are
 * reported as locked, not checked) or at one left behind by a crash, as it was left.
 *
 * <pre>
 * java -cp tally-core.jar:tally-local.jar dev.tally.local.LocalStoreInspector dump ./tally-data
 * java -cp ... dev.tally.local.LocalStoreInspector verify /var/lib/app/counters.tally
 * </pre>
 */
public final class LocalStoreInspector {
  /** How many keys {@link #dump(Path, PrintStream)} lists. */
  public static final int DEFAULT_MAX_KEYS = 1000;
  private static final int MAX_REPORTED_PROBLEMS = 100;
  /** How many times {@code verify} reads a slot that is locked or changing before it skips it. */
  private static final int BUSY_TRIES = 8;

  private LocalStoreInspector() {}

  /**
   * {@code dump PATH [MAX_KEYS]} or {@code verify PATH}, on standard output; {@code verify}
   * exits with status 1 if it finds a problem.
   */
  public static void main(String[] args) {
    if (args.length < 2 || !(args[0].equals("dump") || args[0].equals("verify"))) {
      System.err.println("usage: LocalStoreInspector dump PATH [MAX_KEYS] | verify PATH");
      System.err.println("  PATH: a store file, or a directory holding " + LocalOptions.FILE_NAME);
      System.exit(2);
    }
    Path path = Path.of(args[1]);
    if (args[0].equals("dump")) {
      dump(path, System.out, args.length > 2 ? Integer.parseInt(args[2]) : DEFAULT_MAX_KEYS);
    } else if (!verify(path, System.out)) {
      System.exit(1);
    }
  }

  /** Prints what the store at {@code path} holds, with at most {@link #DEFAULT_MAX_KEYS} keys. */
  public static void dump(Path path, PrintStream out) {
    dump(path, out, DEFAULT_MAX_KEYS);
  }

  /**
   * Prints the store at {@code path} (a store file, or a directory holding one): its header,
   * geometry, segments, key heap, journal entries in use, how many slots are live (counters and
   * limiters), expired, tombstones, reserved, empty and locked, then up to {@code maxKeys} keys,
   * each with its value or limiter state and its expiry.
   *
   * @throws StoreException if the file is missing, unreadable or not a Tally store file
   */
  public static void dump(Path path, PrintStream out, int maxKeys) {
    dump(path, out, maxKeys, TimeSource.system().nanos());
  }

  /**
   * Checks the store at {@code path}: its header; every slot's checksum; that every live key's
   * record hashes to its key hash and its fingerprint finds it; that every limiter's state
   * record is whole and is its key's; that no key is live twice; and that the key heap is within
   * the file. Prints each problem, notes what the next process to open the file will recover
   * (locks and journal entries of dead processes, an unclean shutdown), and a summary.
   *
   * @return whether no problem was found (notes are not problems)
   */
  public static boolean verify(Path path, PrintStream out) {
    Path file = resolve(path);
    View v;
    try {
      v = View.open(file);
    } catch (StoreException e) {
      out.println("verify " + file + ": problem: " + e.getMessage());
      return false;
    }
    try (v) {
      return v.verify(out);
    }
  }

  static void dump(Path path, PrintStream out, int maxKeys, long now) {
    try (View v = View.open(resolve(path))) {
      v.dump(out, maxKeys, now);
    }
  }

  private static Path resolve(Path path) {
    return Files.isDirectory(path) ? path.resolve(LocalOptions.FILE_NAME) : path;
  }

  /** The file, mapped read-only, and its geometry, read afresh as a live store grows. */
  private static final class View implements AutoCloseable, SlotAudit.Records {
    final Path path;
    final FileChannel channel;
    final FileMap map;
    final long size;
    final long segment0Slots;
    final long heap0;
    long fileLength;
    long[] segments;
    long[] heapChunks;

    private View(Path path, FileChannel channel, ByteBuffer header, long size) throws IOException {
      this.path = path;
      this.channel = channel;
      this.size = size;
      Header.validateGeometry(path, header, size);
      this.segment0Slots = header.getLong(H_SEGMENT0_SLOTS);
      this.heap0 = header.getLong(H_HEAP0_BYTES);
      String[] why = new String[1];
      Header.Directory d = Header.directory(header, size, why);
      for (int tries = 0; d == null && tries < 100; tries++) {
        // A process may be growing the store right now: its growth lock is held while the
        // directory and its checksum disagree. Read again a little later.
        if (header.getLong(H_GROW_LOCK) == 0 && tries > 2) {
          break;
        }
        LockSupport.parkNanos(10_000_000);
        header = Header.read(channel);
        d = Header.directory(header, channel.size(), why);
      }
      if (d == null) {
        throw Header.damaged(path, why[0]);
      }
      this.map = new FileMap(channel, LocalOptions.DEFAULT_WINDOW_SHIFT, true);
      use(d);
    }

    private void use(Header.Directory d) {
      map.mapTo(d.fileLength());
      fileLength = d.fileLength();
      segments = d.segments();
      heapChunks = d.heapChunks();
    }

    /** Reads the directory again, as a store in use may have grown since; false if it cannot. */
    private boolean refresh() {
      try {
        for (int tries = 0; tries < 10; tries++) {
          Header.Directory d = Header.directory(Header.read(channel), channel.size(), new String[1]);
          if (d != null) {
            if (d.heapChunks().length >= heapChunks.length && d.segments().length >= segments.length) {
              use(d);
            }
            return true;
          }
          LockSupport.parkNanos(1_000_000);
        }
      } catch (IOException | StoreException e) {
        // keep what we have
      }
      return false;
    }

    static View open(Path path) {
      FileChannel ch = null;
      try {
        ch = FileChannel.open(path, StandardOpenOption.READ);
        return new View(path, ch, Header.read(ch), ch.size());
      } catch (IOException e) {
        close(ch);
        throw new StoreException("cannot read the Tally store file " + path + ": " + e, e);
      } catch (RuntimeException e) {
        close(ch);
        throw e;
      }
    }

    long heapCapacity() {
      return heap0 * ((1L << heapChunks.length) - 1);
    }

    /** The heap top as it is now, or -1 if its word fails its check. */
    long heapTop() {
      long word = map.getLongVolatile(H_HEAP_TOP);
      return KeyHeap.topOk(word) ? (word & 0xFFFF_FFFFL) << 3 : -1;
    }

    /** The file offset of heap offset {@code v}, or -1 if it is outside the heap in use. */
    long heapAddress(long v, long len) {
      if (v < Layout.HEAP_START || v + len > heapTop()) {
        return -1;
      }
      if (v + len > heapCapacity() && (!refresh() || v + len > heapCapacity())) {
        return -1;
      }
      int c = 63 - Long.numberOfLeadingZeros(v / heap0 + 1);
      long at = heapChunks[c] + (v - heap0 * ((1L << c) - 1));
      return at + len <= fileLength ? at : -1;
    }

    @Override
    public byte[] key(int ref) {
      long v = (ref & 0xFFFF_FFFFL) << 3;
      long at = heapAddress(v, 8);
      if (at < 0) {
        return null;
      }
      int len = map.getIntVolatile(at);
      if (len <= 0 || len > dev.tally.Counters.MAX_KEY_BYTES || heapAddress(v, 8L + len) < 0) {
        return null;
      }
      byte[] b = new byte[len];
      map.getBytes(at + 8, b, 0, len);
      return b;
    }

    @Override
    public boolean recordOk(long ref, long keyHash) {
      boolean[] ok = new boolean[1];
      return record(ref, keyHash, ok) != null && ok[0];
    }

    /** The key of a slot, or null if its record is not readable. */
    byte[] key(long slot) {
      return key(map.getInt(slot + S_KEY_REF));
    }

    /** A limiter's state record: last now, words; null if not a plausible record. */
    long[] record(long ref, long keyHash, boolean[] checked) {
      long v = (ref & 0xFFFF_FFFFL) << 3;
      long at = heapAddress(v, R_WORDS);
      if (ref >>> 32 != 0 || at < 0) {
        return null;
      }
      int bytes = map.getIntVolatile(at);
      int cls = map.getInt(at + 4);
      int n = (bytes - (R_WORDS - 8)) / 8;
      if (n < 0 || bytes != R_WORDS - 8 + n * 8 || n > Layout.MAX_RECORD_WORDS || cls < 0
          || cls >= SIZE_CLASSES.length || SIZE_CLASSES[cls] < 8 + bytes || heapAddress(v, 8L + bytes) < 0) {
        return null;
      }
      long[] r = new long[n + 1];
      r[0] = map.getLong(at + R_LAST_NOW);
      long[] words = new long[n];
      for (int i = 0; i < n; i++) {
        words[i] = map.getLong(at + R_WORDS + i * 8L);
        r[i + 1] = words[i];
      }
      checked[0] = map.getLong(at + R_CHECK) == Hashing.record(keyHash, r[0], words);
      return r;
    }

    /** Calls {@code visitor} with the offset of every slot, segment after segment. */
    void eachSlot(java.util.function.LongConsumer visitor) {
      for (int s = 0; s < segments.length; s++) {
        long slots = segment0Slots << s;
        for (long i = 0; i < slots; i++) {
          if (Table.isSlot(i)) {
            visitor.accept(segments[s] + i * SLOT);
          }
        }
      }
    }

    // ---------------------------------------------------------------- dump

    void dump(PrintStream out, int maxKeys, long now) {
      out.println("Tally store file " + path);
      out.printf(Locale.ROOT, "  format      version %d: pages of %d bytes, slots of %d bytes,"
          + " %d insert stripes, %d journal entries of %d bytes%n", map.getInt(H_VERSION),
          Layout.PAGE, SLOT, STRIPES, ENTRIES, ENTRY_SIZE);
      out.printf(Locale.ROOT, "  size        %,d bytes (the header accounts for %,d)%n", size, fileLength);
      boolean clean = map.getIntVolatile(H_CLEAN) == 1;
      long boot = ProcessOwner.bootId();
      out.println("  shutdown    " + (clean ? "clean" : "not clean: the file is open now, or the"
          + " last process to use it died (the next first opener recovers it)"));
      out.println("  boot        " + (boot != 0 && boot == map.getLongVolatile(H_BOOT)
          ? "last opened since this machine booted" : "last opened before this machine booted"));
      out.printf(Locale.ROOT, "  segments    %d (segment n has %,d << n cells, in pages of %d: a"
          + " cell of fingerprints and %d slots)%n", segments.length, segment0Slots, SLOTS_PER_PAGE,
          SLOTS_PER_PAGE - 1);
      for (int s = 0; s < segments.length; s++) {
        long slots = segment0Slots << s;
        out.printf(Locale.ROOT, "    segment %d at %,d: %,d slots%n", s, segments[s],
            slots / SLOTS_PER_PAGE * (SLOTS_PER_PAGE - 1));
      }
      out.printf(Locale.ROOT, "  key heap    %d chunk(s), %,d of %,d bytes used%s%n", heapChunks.length,
          heapTop(), heapCapacity(), heapTop() < 0 ? " (the top word fails its check)" : "");
      int entries = 0;
      StringBuilder journal = new StringBuilder();
      for (int i = 0; i < ENTRIES; i++) {
        long at = ENTRIES_AT + (long) i * ENTRY_SIZE;
        long owner = map.getLongVolatile(at + E_OWNER);
        if (owner != 0) {
          entries++;
          journal.append(String.format(Locale.ROOT, "%n    entry %d: %s, %s, %d slot image(s)%s", i,
              who(owner), map.getIntVolatile(at + E_STATE) == COMMITTED ? "committed" : "open",
              Math.min(map.getIntVolatile(at + E_COUNT), ENTRY_IMAGES),
              map.getLongVolatile(at + E_CLAIM) != 0 ? ", being recovered by "
                  + who(map.getLongVolatile(at + E_CLAIM)) : ""));
        }
      }
      out.println("  journal     " + entries + " entr" + (entries == 1 ? "y" : "ies") + " in use" + journal);
      int stripes = 0;
      for (int i = 0; i < STRIPES; i++) {
        stripes += map.getLongVolatile(STRIPES_AT + i * 8L) != 0 ? 1 : 0;
      }
      long grow = map.getLongVolatile(H_GROW_LOCK);
      if (stripes > 0 || grow != 0) {
        out.println("  held now    " + stripes + " insert stripe(s)"
            + (grow != 0 ? ", the growth lock (" + who(grow) + ")" : ""));
      }

      long[] n = new long[9]; // counters, limiters, expired, tombstones, reserved, empty, locked, all, torn
      List<String> lines = new ArrayList<>();
      eachSlot(slot -> {
        n[7]++;
        long meta = map.getLongVolatile(slot + S_META);
        long lock = map.getLongVolatile(slot + S_LOCK);
        if (lock != 0) {
          n[6]++;
        }
        switch (Table.state(meta)) {
          case EMPTY -> n[5]++;
          case TOMBSTONE -> n[3]++;
          case RESERVED -> n[4]++;
          default -> {
            String torn = lock == 0 ? torn(slot) : null; // a locked slot's fields may be changing
            if (torn != null) {
              // Never shown as a key and value: the next open after a crash drops it (verify says why).
              n[8]++;
              if (lines.size() < maxKeys) {
                lines.add("  <torn slot at " + slot + ": " + torn + "; dropped when the file is next opened"
                    + " after a crash>");
              }
              return;
            }
            long expiry = map.getLong(slot + S_EXPIRY);
            boolean expired = Table.expired(expiry, now);
            n[expired ? 2 : Table.record(meta) ? 1 : 0]++;
            if (lines.size() < maxKeys) {
              lines.add(describe(slot, meta, lock, expiry, expired, now));
            }
          }
        }
      });
      out.printf(Locale.ROOT, "  slots       %,d: %,d live counter(s), %,d live limiter(s), %,d expired,"
          + " %,d tombstone(s), %,d reserved, %,d empty; %,d locked now%s%n",
          n[7], n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[8] == 0 ? "" : String.format(Locale.ROOT, "; %,d torn", n[8]));
      long keys = n[0] + n[1] + n[2];
      out.println("keys at " + Instant.ofEpochSecond(0, now) + (keys > lines.size()
          ? " (the first " + lines.size() + " of " + keys + ")" : "") + ":");
      for (String line : lines) {
        out.println(line);
      }
    }

    /** Why an unlocked live slot cannot be trusted, or null: what {@link #verify} checks. */
    private String torn(long slot) {
      String why = SlotAudit.problem(map, this, slot);
      return SlotAudit.BUSY.equals(why) ? null : why;
    }

    private String describe(long slot, long meta, long lock, long expiry, boolean expired, long now) {
      byte[] k = key(slot);
      String key = k == null ? "<unreadable key record>" : printable(new String(k, StandardCharsets.UTF_8));
      String when = expired ? "  (expired " + duration(now - expiry) + " ago)"
          : expiry == 0 ? "" : "  (" + (Table.record(meta) ? "full again" : "expires") + " in "
              + duration(expiry - now) + ")";
      String locked = lock != 0 ? "  [locked by " + who(lock) + "]" : "";
      long held = map.getLong(slot + S_HELD);
      if (Table.record(meta)) {
        boolean[] checked = new boolean[1];
        long[] r = record(held, map.getLong(slot + S_KEY_HASH), checked);
        StringBuilder b = new StringBuilder("  limiter  ").append(key);
        if (r == null) {
          b.append(" = <unreadable state record ").append(held).append('>');
        } else if (r.length == 1) {
          b.append(" = full again (a tombstone that keeps the instant it was last decided at: ")
              .append(Instant.ofEpochSecond(0, r[0])).append(')');
          return b.append(locked).toString();
        } else {
          for (int o = 1; o + 5 < r.length; o += 6) {
            long tag = r[o];
            String kind = "tag " + tag;
            for (Limit.Kind candidate : Limit.Kind.values()) {
              if (candidate.tag() == tag) {
                kind = candidate.name().toLowerCase(Locale.ROOT);
              }
            }
            b.append(o == 1 ? " = " : ", ").append(kind).append(" [").append(r[o + 1]);
            for (int j = 2; j < 6; j++) {
              b.append(", ").append(r[o + j]);
            }
            b.append(']');
          }
          b.append("; decided at ").append(Instant.ofEpochSecond(0, r[0]));
          if (!checked[0]) {
            b.append(" <check word mismatch>");
          }
        }
        return b.append(when).append(locked).toString();
      }
      long raw = map.getLongVolatile(slot + S_RAW);
      long bits = raw != SEALED ? raw ^ map.getLong(slot + S_MASK) : held;
      String value = Table.floating(meta) ? Double.toString(Double.longBitsToDouble(bits)) : Long.toString(bits);
      return "  counter  " + key + " = " + value + when + locked;
    }

    // ---------------------------------------------------------------- verify

    boolean verify(PrintStream out) {
      List<String> problems = new ArrayList<>();
      List<String> notes = new ArrayList<>();
      if (map.getIntVolatile(H_CLEAN) != 1) {
        notes.add("not closed cleanly: it is open now, or the last process to use it died"
            + " (the next first opener recovers it)");
      }
      long top = heapTop();
      if (top < 0) {
        problems.add("the key heap's top (header offset " + H_HEAP_TOP + ") fails its check");
      } else if (top > heapCapacity() || top < Layout.HEAP_START) {
        problems.add("the key heap's top (" + top + ") is outside its " + heapCapacity() + " bytes");
      }
      for (int i = 0; i < ENTRIES; i++) {
        long owner = map.getLongVolatile(ENTRIES_AT + (long) i * ENTRY_SIZE + E_OWNER);
        if (owner != 0 && ProcessOwner.CURRENT.isDead(owner)) {
          notes.add("journal entry " + i + " was left by " + who(owner)
              + ": the next process to meet its locks rolls it back or forward");
        }
      }
      Map<String, long[]> seen = new HashMap<>(); // key -> slot, meta when seen
      long[] checked = new long[2]; // slots checked, busy (locked or changing: skipped)
      eachSlot(slot -> {
        String why = SlotAudit.BUSY;
        for (int t = 0; t < BUSY_TRIES && SlotAudit.BUSY.equals(why); t++) {
          if (t > 0) {
            LockSupport.parkNanos(100_000L << Math.min(t, 5));
          }
          why = SlotAudit.problem(map, this, slot);
        }
        if (SlotAudit.BUSY.equals(why)) {
          checked[1]++;
          long lock = map.getLongVolatile(slot + S_LOCK);
          if (lock != 0 && ProcessOwner.CURRENT.isDead(lock)) {
            notes.add("slot at " + slot + " is locked by " + who(lock)
                + ": the next process to meet it recovers it");
          }
          return; // being written by a live process, which checked it before locking it
        }
        long meta = map.getLongVolatile(slot + S_META);
        if (Table.state(meta) == EMPTY && why == null) {
          return;
        }
        checked[0]++;
        String where = "slot at " + slot;
        if (why != null) {
          problems.add(where + ": " + why);
          return;
        }
        if (Table.state(meta) != LIVE) {
          return;
        }
        byte[] k = key(slot);
        if (k == null) {
          return; // freed since the check: the slot changed, and is not what it was
        }
        String key = new String(k, StandardCharsets.UTF_8);
        where += " ('" + printable(key) + "')";
        long[] other = seen.put(key, new long[] {slot, meta});
        if (other != null && map.getLongVolatile(other[0] + S_META) == other[1]
            && map.getLongVolatile(slot + S_META) == meta) {
          problems.add(where + ": the key is also live in the slot at " + other[0]);
        }
        if (!Table.record(meta) && map.getLongVolatile(slot + S_RAW) == SEALED
            && map.getLongVolatile(slot + S_LOCK) == 0 && map.getLongVolatile(slot + S_META) == meta) {
          notes.add(where + ": sealed with no lock, as a process that died left it"
              + " (the next first opener unseals it)");
        }
      });
      print(out, problems, notes);
      out.printf(Locale.ROOT, "verify %s: %s (%,d slots checked, %,d live keys, %,d locked or"
          + " changing and skipped)%n", path, problems.isEmpty() ? "OK" : problems.size() + " problem(s)",
          checked[0], seen.size(), checked[1]);
      return problems.isEmpty();
    }

    private static void print(PrintStream out, List<String> problems, List<String> notes) {
      for (int i = 0; i < problems.size() && i < MAX_REPORTED_PROBLEMS; i++) {
        out.println("problem: " + problems.get(i));
      }
      if (problems.size() > MAX_REPORTED_PROBLEMS) {
        out.println("problem: ... and " + (problems.size() - MAX_REPORTED_PROBLEMS) + " more");
      }
      for (int i = 0; i < notes.size() && i < MAX_REPORTED_PROBLEMS; i++) {
        out.println("note: " + notes.get(i));
      }
      if (notes.size() > MAX_REPORTED_PROBLEMS) {
        out.println("note: ... and " + (notes.size() - MAX_REPORTED_PROBLEMS) + " more");
      }
    }

    @Override
    public void close() {
      close(channel);
    }

    private static void close(FileChannel ch) {
      if (ch != null) {
        try {
          ch.close();
        } catch (IOException ignored) {
          // read-only: nothing to lose
        }
      }
    }
  }

  private static String who(long owner) {
    return "pid " + ProcessOwner.pid(owner) + (ProcessOwner.CURRENT.isDead(owner) ? " (dead)" : " (alive)");
  }

  private static String duration(long nanos) {
    if (nanos < 1_000_000_000L) {
      return String.format(Locale.ROOT, "%.3f ms", nanos / 1e6);
    }
    if (nanos < 86_400_000_000_000L) {
      return String.format(Locale.ROOT, "%.3f s", nanos / 1e9);
    }
    return String.format(Locale.ROOT, "%.1f days", nanos / 86_400e9);
  }

  /** The key with control characters escaped, so each key prints on one line. */
  private static String printable(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c == 0x7F) {
        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}
