package dev.tally.local;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Who holds a lock: an owner word is a process id and a start token ({@code pid | token << 32}),
 * so a lock left by a process that died is told apart from one held by a live process, even
 * after the id is reused. A word is never 0, which means "free".
 *
 * <p>On Linux the token is the process start time in clock ticks since boot, read from
 * {@code /proc/<pid>/stat}, and a process counts as dead when that file is gone, names a
 * zombie, or has another start time ({@link ProcessHandle#isAlive} says a zombie is alive,
 * and a killed child stays a zombie until its parent reaps it). Elsewhere the token hashes
 * {@link ProcessHandle.Info#startInstant()} and liveness is {@link ProcessHandle#isAlive()}.
 * Processes sharing a store must share a PID namespace (not separate containers).
 */
final class ProcessOwner {
  static final ProcessOwner CURRENT = new ProcessOwner();

  private static final long ALIVE_CACHE_NANOS = 1_000_000;

  /** This process's owner word. */
  final long word;
  private final boolean proc;
  private final ConcurrentHashMap<Long, Long> aliveUntil = new ConcurrentHashMap<>();
  private final ConcurrentHashMap.KeySetView<Long, Boolean> dead = ConcurrentHashMap.newKeySet();

  private ProcessOwner() {
    long pid = ProcessHandle.current().pid();
    Integer token = procToken(pid);
    this.proc = token != null;
    this.word = word(pid, proc ? token : handleToken(ProcessHandle.current()));
  }

  static long word(long pid, int token) {
    return (pid & 0xFFFF_FFFFL) | ((long) token << 32);
  }

  static long pid(long word) {
    return word & 0xFFFF_FFFFL;
  }

  /** Whether the owner named by {@code word} has died. Verdicts of death are final. */
  boolean isDead(long word) {
    if (word == this.word) {
      return false;
    }
    Long w = word;
    if (dead.contains(w)) {
      return true;
    }
    long now = System.nanoTime();
    Long until = aliveUntil.get(w);
    if (until != null && now - until < 0) {
      return false;
    }
    boolean isDead = !alive(word);
    if (isDead) {
      dead.add(w);
      aliveUntil.remove(w);
    } else {
      if (aliveUntil.size() > 10_000) {
        aliveUntil.clear();
      }
      aliveUntil.put(w, now + ALIVE_CACHE_NANOS);
    }
    return isDead;
  }

  private boolean alive(long word) {
    long pid = pid(word);
    int token = (int) (word >>> 32);
    if (proc) {
      String stat;
      try {
        stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
      } catch (NoSuchFileException e) {
        return false;
      } catch (IOException | RuntimeException e) {
        stat = null; // hidden from us (hidepid): ask the JDK instead
      }
      if (stat != null) {
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
        char state = f[0].isEmpty() ? '?' : f[0].charAt(0);
        if (state == 'Z' || state == 'X' || state == 'x') {
          return false;
        }
        return f.length > 19 && (int) Long.parseLong(f[19]) == token;
      }
      return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }
    Optional<ProcessHandle> h = ProcessHandle.of(pid);
    return h.isPresent() && h.get().isAlive() && handleToken(h.get()) == token;
  }

  private static Integer procToken(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
      return (int) Long.parseLong(f[19]);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static int handleToken(ProcessHandle h) {
    Instant start = h.info().startInstant().orElse(Instant.EPOCH);
    return (int) Hashing.mix(start.getEpochSecond() * 1000 + start.getNano() / 1_000_000);
  }

  /** A hash of the running kernel's boot id, or 0 where there is none to read. */
  static long bootId() {
    try {
      byte[] b = Files.readAllBytes(Path.of("/proc/sys/kernel/random/boot_id"));
      long h = Hashing.key(b, 0, b.length);
      return h == 0 ? 1 : h;
    } catch (IOException | SecurityException | UnsupportedOperationException e) {
      return 0;
    }
  }

  @Override
  public String toString() {
    return "process " + pid(word);
  }
}
