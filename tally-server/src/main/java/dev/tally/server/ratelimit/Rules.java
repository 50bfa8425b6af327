package dev.tally.server.ratelimit;

import dev.tally.server.async.Lazy;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The rules in force, read from files given as {@code --rules} (files, or directories whose
 * {@code *.yaml} and {@code *.yml} files are read, dot-files skipped), and read again when they
 * change.
 *
 * <p>The rules are one immutable {@link RuleSet}, swapped whole: a request reads it once and
 * finishes with it, so a reload never leaves one half-applied, and nothing is read from disk on
 * the way of a request. A set of files is applied all or nothing: if one file is refused (bad
 * YAML, an unknown key, a domain defined twice), the error names the file and line, is logged
 * once, and the rules already in force stay. {@link #watch} checks the files on a timer: their
 * bytes are read and compared (a digest), so an edit in place, a new file, a removed one and a
 * symbolic link swapped to another directory (as Kubernetes does with a ConfigMap) are all seen.
 */
public final class Rules implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");

  /** What a reload did. */
  public enum Outcome { UNCHANGED, APPLIED, REFUSED }

  private record Loaded(RuleSet rules, byte[] digest, Instant at) {}

  /**
   * What an operator wants to know: the files and domains in force, when they were loaded, how
   * many reloads were applied and refused, and the last refusal (null if the files in force are
   * the last read).
   */
  public record Status(List<String> files, List<String> domains, Instant loadedAt, long applied,
      long refused, String lastError) {}

  private final List<Path> paths;
  private volatile Loaded loaded;
  private final AtomicLong applied = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private volatile String lastError;
  private byte[] lastRefusedDigest;
  private ScheduledExecutorService poller;

  private Rules(List<Path> paths, Loaded loaded) {
    this.paths = paths;
    this.loaded = loaded;
  }

  /**
   * Reads the rules (files, or directories of {@code *.yaml} files); the server does not start
   * with rules it cannot use, and the exception names the file and line of the first problem.
   */
  public static Rules load(List<Path> paths) throws RulesException {
    if (paths.isEmpty()) {
      throw new RulesException("no rules file given; pass --rules FILE_OR_DIRECTORY");
    }
    List<Path> copy = List.copyOf(paths);
    Map<Path, byte[]> files = read(copy);
    Loaded l = new Loaded(parse(files), digest(files), Instant.now());
    if (l.rules().domains().isEmpty()) {
      LOG.log(Level.WARNING, "the rules files {0} define no domain yet: every descriptor is"
          + " answered OK until one is added", copy);
    }
    return new Rules(copy, l);
  }

  /** Rules held in memory, never reloaded: for tests and tools. */
  public static Rules of(String file, String yaml) throws RulesException {
    Map<Path, byte[]> files = Map.of(Path.of(file), yaml.getBytes(StandardCharsets.UTF_8));
    return new Rules(List.of(), new Loaded(parse(files), digest(files), Instant.now()));
  }

  public RuleSet current() {
    return loaded.rules();
  }

  /** The state of the rules, for {@code GET /v1/ratelimit}. */
  public Status status() {
    Loaded l = loaded;
    return new Status(l.rules().files(), List.copyOf(l.rules().domains()), l.at(), applied.get(),
        refused.get(), lastError);
  }

  /**
   * Reads the files again and, if they changed and are valid, puts them in force. A refusal is
   * logged once per content refused, not once per check.
   */
  public synchronized Outcome reload() {
    if (paths.isEmpty()) {
      return Outcome.UNCHANGED;
    }
    Map<Path, byte[]> files;
    byte[] digest;
    try {
      files = read(paths);
      digest = digest(files);
    } catch (RulesException e) {
      return refuse(e.getMessage(), e.getMessage().getBytes(StandardCharsets.UTF_8));
    }
    if (Arrays.equals(digest, loaded.digest())) {
      lastError = null;
      return Outcome.UNCHANGED;
    }
    if (files.isEmpty() && !loaded.rules().domains().isEmpty()) {
      // Most likely a directory caught half-written, and applying it would lift every limit.
      return refuse("no rules files in " + paths + " now; to remove every limit on purpose, leave a file"
          + " with its domain and no descriptors", digest);
    }
    RuleSet next;
    try {
      next = parse(files);
    } catch (RulesException e) {
      return refuse(e.getMessage(), digest);
    }
    loaded = new Loaded(next, digest, Instant.now());
    applied.incrementAndGet();
    lastError = null;
    lastRefusedDigest = null;
    LOG.log(Level.INFO, "rules reloaded: domains {0} from {1}", next.domains(), next.files());
    return Outcome.APPLIED;
  }

  private Outcome refuse(String message, byte[] digest) {
    lastError = message;
    if (!Arrays.equals(digest, lastRefusedDigest)) {
      lastRefusedDigest = digest;
      refused.incrementAndGet();
      LOG.log(Level.WARNING, "rules not reloaded: {0}; the rules loaded at {1} stay in force",
          message, loaded.at());
    }
    return Outcome.REFUSED;
  }

  /** Checks the files every {@code interval} on a thread of its own, until {@link #close}. */
  public synchronized void watch(Duration interval) {
    Objects.requireNonNull(interval, "interval");
    if (interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException("--rules-poll must be positive, not " + dev.tally.Durations.format(interval));
    }
    if (poller != null || paths.isEmpty()) {
      return;
    }
    poller = Executors.newSingleThreadScheduledExecutor(Lazy.daemonThreads("tally-rules-watch-"));
    long nanos = interval.toNanos();
    poller.scheduleWithFixedDelay(() -> {
      try {
        reload();
      } catch (RuntimeException e) { // a bug must not stop the watching
        LOG.log(Level.ERROR, "checking the rules files failed", e);
      }
    }, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public synchronized void close() {
    if (poller != null) {
      poller.shutdownNow();
      poller = null;
    }
  }

  /** How often a read that saw the files change under it starts again before it gives up. */
  private static final int READ_ATTEMPTS = 20;

  /**
   * The bytes of every file the paths name, in a stable order, all from one version of the
   * files. A directory is usually swapped whole (a symbolic link moved to a new directory, as
   * envoyproxy/ratelimit's deployments and Kubernetes ConfigMaps do): the link is resolved once
   * and the real directory listed and read, and each file's own links too; then everything is
   * resolved again, and if anything resolves elsewhere now, or a file vanished while being read,
   * the read starts again. A swap therefore never yields an empty set, nor one file from each
   * version.
   */
  private static Map<Path, byte[]> read(List<Path> paths) throws RulesException {
    RulesException last = null;
    for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      try {
        Map<Path, Path> before = resolve(paths);
        Map<Path, byte[]> files = new java.util.LinkedHashMap<>();
        for (Map.Entry<Path, Path> f : before.entrySet()) {
          files.put(f.getKey(), Files.readAllBytes(f.getValue()));
        }
        if (before.equals(resolve(paths))) {
          return files;
        }
      } catch (NoSuchFileException e) {
        last = new RulesException(e.getFile() + ": no such file; --rules takes a rules file or a"
            + " directory of *.yaml files");
      } catch (IOException e) {
        throw new RulesException("cannot read the rules: " + e.getMessage());
      }
      Thread.onSpinWait();
    }
    throw last != null ? last : new RulesException("the rules files kept changing while being read ("
        + READ_ATTEMPTS + " attempts); the rules in force stay");
  }

  /**
   * Each file the paths name (a directory: its {@code *.yaml} and {@code *.yml} files, not hidden
   * ones), as named under the path given, and the real file it is now.
   */
  private static Map<Path, Path> resolve(List<Path> paths) throws IOException {
    Map<Path, Path> files = new java.util.LinkedHashMap<>();
    for (Path p : paths) {
      if (!Files.isDirectory(p)) {
        files.put(p, p.toRealPath());
        continue;
      }
      Path dir = p.toRealPath();
      List<String> names = new ArrayList<>();
      try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
        for (Path f : ds) {
          String name = f.getFileName().toString();
          if (!name.startsWith(".") && (name.endsWith(".yaml") || name.endsWith(".yml"))
              && Files.isRegularFile(f)) {
            names.add(name);
          }
        }
      }
      names.sort(null);
      for (String name : names) {
        files.put(p.resolve(name), dir.resolve(name).toRealPath());
      }
    }
    return files;
  }

  private static RuleSet parse(Map<Path, byte[]> files) throws RulesException {
    Map<String, RuleSet.Domain> domains = new HashMap<>();
    List<String> names = new ArrayList<>();
    for (Map.Entry<Path, byte[]> f : files.entrySet()) {
      String name = f.getKey().toString();
      RuleSet.Domain d = RulesParser.parse(name, f.getValue());
      RuleSet.Domain before = domains.putIfAbsent(d.name(), d);
      if (before != null) {
        throw new RulesException(name + ": domain '" + d.name() + "' is already defined in "
            + before.file() + "; keep each domain in one file");
      }
      names.add(name);
    }
    return new RuleSet(domains, names);
  }

  private static byte[] digest(Map<Path, byte[]> files) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (Map.Entry<Path, byte[]> f : files.entrySet()) {
        md.update(f.getKey().toString().getBytes(StandardCharsets.UTF_8));
        md.update((byte) 0);
        md.update(f.getValue());
        md.update((byte) 0);
      }
      return md.digest();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is always present", e);
    }
  }
}
