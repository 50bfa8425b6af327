package dev.tally.local;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * What a {@code file:} URI says: where the store is and how it flushes.
 *
 * <pre>
 * file:./tally-data                 a directory (created if missing) holding store.tally
 * file:/var/lib/app/counters.tally  the store file itself (a path ending in .tally, or an
 *                                   existing file)
 * file:./tally-data?sync=always     options: sync=periodic (default) | always | none
 *                                            slots=16384 (slots in the first segment)
 *                                            mode=600 (permissions of a new store file)
 * </pre>
 *
 * @param file the store file
 * @param sync when writes are forced to the device
 * @param segment0Slots slots in the first segment of a new file: a power of two, at least 64
 * @param windowShift log2 of the largest single mapping (tests lower it to exercise windows)
 * @param mode the permission bits of a new store file (0600 by default: its owner only); the
 *     directories Tally creates for it get the same, with search ({@code x}) wherever read is
 */
record LocalOptions(Path file, Sync sync, long segment0Slots, int windowShift, int mode) {

  /** The file name used when the URI names a directory. */
  static final String FILE_NAME = "store.tally";
  static final int DEFAULT_WINDOW_SHIFT = 30;
  static final int DEFAULT_MODE = 0600;

  /** When changes are forced from the page cache to the device. */
  enum Sync {
    /** Every 100 ms by a daemon thread, like Redis' {@code appendfsync everysec}. */
    PERIODIC,
    /** Before every write returns. */
    ALWAYS,
    /** Never by Tally: the kernel writes back when it likes (and at the last close). */
    NONE
  }

  LocalOptions withWindowShift(int shift) {
    return new LocalOptions(file, sync, segment0Slots, shift, mode);
  }

  LocalOptions withSegment0Slots(long slots) {
    return new LocalOptions(file, sync, slots, windowShift, mode);
  }

  /** The permissions a new store file gets, exactly (not narrowed by the umask). */
  Set<PosixFilePermission> filePermissions() {
    return permissions(mode);
  }

  /** The permissions of each directory Tally creates: the file's, plus search where read is. */
  Set<PosixFilePermission> directoryPermissions() {
    return permissions(mode | ((mode & 0444) >>> 2));
  }

  private static Set<PosixFilePermission> permissions(int bits) {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] order = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
      PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
    };
    for (int i = 0; i < order.length; i++) {
      if ((bits & (1 << i)) != 0) {
        set.add(order[i]);
      }
    }
    return set;
  }

  static LocalOptions parse(String uri) {
    String example = " (e.g. file:./tally-data or file:/var/lib/app/tally-data?sync=always)";
    if (uri == null || !uri.startsWith("file:")) {
      throw new IllegalArgumentException("not a file: URI: " + uri + example);
    }
    String rest = uri.substring("file:".length());
    String query = null;
    int q = rest.indexOf('?');
    if (q >= 0) {
      query = rest.substring(q + 1);
      rest = rest.substring(0, q);
    }
    if (rest.startsWith("//")) { // file:///abs/path or file://localhost/abs/path
      int slash = rest.indexOf('/', 2);
      String authority = slash < 0 ? rest.substring(2) : rest.substring(2, slash);
      if (!authority.isEmpty() && !authority.equals("localhost")) {
        throw new IllegalArgumentException("file: URI '" + uri + "' names host '" + authority
            + "'; the file store is local to this host" + example);
      }
      rest = slash < 0 ? "" : rest.substring(slash);
    }
    String pathText = decode(rest);
    if (pathText.isEmpty()) {
      throw new IllegalArgumentException("file: URI '" + uri + "' names no path" + example);
    }
    Sync sync = Sync.PERIODIC;
    long slots = Layout.DEFAULT_SEGMENT0_SLOTS;
    int mode = DEFAULT_MODE;
    if (query != null && !query.isEmpty()) {
      for (String pair : query.split("&", -1)) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String name = eq < 0 ? pair : pair.substring(0, eq);
        String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
        switch (name) {
          case "sync" -> {
            try {
              sync = Sync.valueOf(value.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
              throw new IllegalArgumentException("file: URI '" + uri + "': sync must be periodic,"
                  + " always or none, not '" + value + "'");
            }
          }
          case "slots" -> {
            try {
              slots = Long.parseLong(value);
            } catch (NumberFormatException e) {
              slots = -1;
            }
            if (slots < Layout.SLOTS_PER_PAGE || Long.bitCount(slots) != 1 || slots > (1L << 32)) {
              throw new IllegalArgumentException("file: URI '" + uri + "': slots must be a power"
                  + " of two from 64 to 2^32, not '" + value + "'");
            }
          }
          case "mode" -> {
            try {
              mode = value.length() >= 3 && value.length() <= 4 ? Integer.parseInt(value, 8) : -1;
            } catch (NumberFormatException e) {
              mode = -1;
            }
            if (mode < 0 || mode > 0777 || (mode & 0600) != 0600) {
              throw new IllegalArgumentException("file: URI '" + uri + "': mode must be octal"
                  + " permissions from 600 to 777 that let the owner read and write (e.g. 600, 640,"
                  + " 660), not '" + value + "'");
            }
          }
          default -> throw new IllegalArgumentException("file: URI '" + uri + "': unknown option '"
              + name + "'; the options are sync=periodic|always|none, slots=<power of two> and"
              + " mode=<octal permissions>");
        }
      }
    }
    Path path;
    try {
      path = Path.of(pathText);
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException("file: URI '" + uri + "' has an invalid path: " + e.getMessage());
    }
    boolean isFile = Files.isRegularFile(path) || (!Files.isDirectory(path) && pathText.endsWith(".tally"));
    return new LocalOptions(isFile ? path : path.resolve(FILE_NAME), sync, slots, DEFAULT_WINDOW_SHIFT, mode);
  }

  /** Percent-decoding (%20 and the like); a lone % stays as it is. */
  private static String decode(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < b.length; i++) {
      if (b[i] == '%' && i + 2 < b.length
          && Character.digit(b[i + 1], 16) >= 0 && Character.digit(b[i + 2], 16) >= 0) {
        out.write(Character.digit(b[i + 1], 16) * 16 + Character.digit(b[i + 2], 16));
        i += 2;
      } else {
        out.write(b[i]);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }
}
