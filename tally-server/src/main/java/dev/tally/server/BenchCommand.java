package dev.tally.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.Counters;
import dev.tally.Durations;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.LimitSpec;
import dev.tally.server.app.Problem;
import java.io.Console;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code tally bench}: N threads run one workload against the store through the public API for
 * a fixed time; each operation is timed into a per-thread HdrHistogram (merged at the end).
 *
 * <p>A bench leaves nothing behind. Without {@code --store} (or {@code $TALLY_STORE}) it runs on
 * a file store of its own in a fresh temporary directory, the kind of store the commands use by
 * default, and deletes the directory at the end; on a store it is given, its keys carry a prefix
 * of their own, {@code tally-bench:RUN:}, so it touches no key of anyone else's, and are deleted
 * at the end. Both happen on SIGTERM or Ctrl-C too: the workers stop, what was measured is
 * printed, and the store is cleaned before the JVM exits.
 *
 * <p>On a terminal, a progress line is redrawn on stderr every second; in a file or a pipe (a
 * log) there is no progress, since {@code \r} redraws there are noise.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Measure the store through the library: operations per second and latency",
        "percentiles. Workloads: incr-one (every thread increments one key), incr-many",
        "(random keys out of --keys), limiter (tryAcquire on one shared token bucket,",
        "--limit). Without --store (or $TALLY_STORE) it runs on a temporary file store",
        "of its own, deleted at the end; on a store given, its keys (tally-bench:RUN:...)",
        "are deleted at the end. Progress is drawn only on a terminal."})
final class BenchCommand implements Callable<Integer> {
  private static final int SLOT = 16; // longs per thread in the progress array: no false sharing
  /** How long SIGTERM waits for the workers to stop and the store to be cleaned. */
  private static final Duration CLEANUP_GRACE = Duration.ofSeconds(30);

  @ParentCommand
  TallyCommand root;

  @Spec
  CommandSpec spec;

  enum Workload {
    INCR_ONE, INCR_MANY, LIMITER;

    String label() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
  }

  @Option(names = "--workload", paramLabel = "NAME", defaultValue = "incr-one",
      converter = WorkloadConverter.class,
      description = "incr-one (default), incr-many or limiter.")
  Workload workload;

  @Option(names = "--threads", paramLabel = "N", defaultValue = "1", description = "Threads (default 1).")
  int threads;

  @Option(names = "--duration", paramLabel = "DURATION", defaultValue = "10s",
      description = "How long to measure (default 10s).")
  Duration duration;

  @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "1s",
      description = "Run this long first, unmeasured, so the JIT has compiled the path (default 1s).")
  Duration warmup;

  @Option(names = "--keys", paramLabel = "N", defaultValue = "10000",
      description = "Distinct keys for incr-many (default 10000).")
  int keys;

  @Option(names = "--limit", paramLabel = "[CAP:]N/PERIOD", defaultValue = "1000000/1s",
      description = "The token bucket of the limiter workload (default 1000000/1s).")
  String limit;

  static final class WorkloadConverter implements picocli.CommandLine.ITypeConverter<Workload> {
    @Override
    public Workload convert(String value) {
      return java.util.Arrays.stream(Workload.values()).filter(w -> w.label().equals(value)).findFirst()
          .orElseThrow(() -> new picocli.CommandLine.TypeConversionException("'" + value
              + "' is not a workload: expected incr-one, incr-many or limiter"));
    }
  }

  /** One operation of the workload; returns whether a limiter allowed it (true otherwise). */
  @FunctionalInterface
  private interface Op {
    boolean run(ThreadLocalRandom random);
  }

  /** Set when the bench must end early (SIGTERM, Ctrl-C): the workers check it each operation. */
  private volatile boolean stopping;
  /** The prefix of every key this run makes, so it touches no other key and can delete its own. */
  private String prefix;

  @Override
  public Integer call() throws Exception {
    if (threads < 1 || keys < 1 || duration.isZero()) {
      throw new IllegalArgumentException("--threads, --keys and --duration must be positive");
    }
    // checked before anything is created
    Limit bucket = LimitSpec.parse(LimitSpec.Kind.TOKEN_BUCKET, limit, "default").limit();
    PrintWriter err = spec.commandLine().getErr();
    prefix = "tally-bench:" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 16) + ":";
    boolean given = storeGiven();
    CountDownLatch cleaned = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      stopping = true;
      try {
        cleaned.await(CLEANUP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "tally-bench-stop");
    // Registered before anything is made: a signal at any later point finds everything cleaned.
    Runtime.getRuntime().addShutdownHook(hook);
    Path temporary = null;
    try {
      temporary = given ? null : Files.createTempDirectory("tally-bench-");
      String uri = temporary == null ? root.store : "file:" + temporary;
      try (Tally tally = Tally.open(uri)) {
        Op op = op(tally, bucket);
        try {
          Result r = measure(op, err);
          print(r, uri);
          if (r.ops == 0 && r.failure.get() != null) {
            return Problem.of(r.failure.get()).exitCode();
          }
          return 0;
        } finally {
          if (temporary == null) {
            removeKeys(tally, bucket);
          }
        }
      }
    } finally {
      if (temporary != null) {
        deleteTree(temporary);
      }
      cleaned.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running: it was waiting for the count-down above
      }
    }
  }

  private boolean storeGiven() {
    for (CommandLine cl = spec.commandLine(); cl != null; cl = cl.getParent()) {
      if (cl.getParseResult() != null && cl.getParseResult().hasMatchedOption("--store")) {
        return true;
      }
    }
    String env = System.getenv("TALLY_STORE");
    return env != null && !env.isEmpty();
  }

  /** Deletes the counters this run made and resets its limiter, on a store the user gave. */
  private void removeKeys(Tally tally, Limit bucket) {
    try {
      Counters counters = tally.counters();
      for (String key : counters.keys(prefix)) {
        counters.delete(key);
      }
      if (workload == Workload.LIMITER) {
        tally.limiter(prefix + "limiter", bucket).reset();
      }
    } catch (RuntimeException e) {
      root.note("tally bench: could not delete its keys (" + prefix + "*): " + e.getMessage());
    }
  }

  private void deleteTree(Path dir) {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    } catch (IOException e) {
      root.note("tally bench: could not delete its temporary store " + dir + ": " + e);
    }
  }

  private Op op(Tally tally, Limit bucket) {
    Counters counters = tally.counters();
    if (workload == Workload.LIMITER) {
      RateLimiter limiter = tally.limiter(prefix + "limiter", bucket);
      return random -> limiter.tryAcquire();
    }
    String[] names = new String[workload == Workload.INCR_ONE ? 1 : keys];
    for (int i = 0; i < names.length; i++) {
      names[i] = workload == Workload.INCR_ONE ? prefix + "one" : prefix + "many:" + i;
    }
    return random -> {
      counters.incr(names.length == 1 ? names[0] : names[random.nextInt(names.length)]);
      return true;
    };
  }

  private static final class Result {
    final Histogram latency = new Histogram(3);
    long ops;
    long allowed;
    long errors;
    double seconds;
    final AtomicReference<Throwable> failure = new AtomicReference<>();
  }

  private Result measure(Op op, PrintWriter err) throws InterruptedException {
    boolean progressShown = terminal();
    Result result = new Result();
    AtomicLongArray progress = new AtomicLongArray(threads * SLOT);
    long warmupNanos = warmup.toNanos();
    long measureNanos = duration.toNanos();
    long begin = System.nanoTime();
    long measureFrom = begin + warmupNanos;
    long end = measureFrom + measureNanos;
    Histogram[] histograms = new Histogram[threads];
    long[][] counts = new long[threads][3];
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int id = t;
      histograms[t] = new Histogram(3);
      Thread w = new Thread(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        Histogram h = histograms[id];
        long ops = 0;
        long allowed = 0;
        long errors = 0;
        long now = System.nanoTime();
        while (now < end && !stopping) {
          boolean measured = now >= measureFrom;
          long t0 = now;
          boolean ok;
          boolean failed = false;
          try {
            ok = op.run(random);
          } catch (RuntimeException e) {
            result.failure.compareAndSet(null, e);
            failed = true;
            ok = false;
          }
          now = System.nanoTime();
          if (measured) {
            h.recordValue(Math.max(1, now - t0));
            ops++;
            if (ok) {
              allowed++;
            } else if (failed) {
              errors++;
            }
            if ((ops & 63) == 0) {
              progress.lazySet(id * SLOT, ops);
            }
          }
        }
        progress.lazySet(id * SLOT, ops);
        counts[id][0] = ops;
        counts[id][1] = allowed;
        counts[id][2] = errors;
      }, "tally-bench-" + t);
      workers.add(w);
      w.start();
    }
    long lastOps = 0;
    long lastAt = measureFrom;
    for (;;) {
      Thread alive = workers.stream().filter(Thread::isAlive).findFirst().orElse(null);
      if (alive == null) {
        break;
      }
      alive.join(1000);
      long now = System.nanoTime();
      if (!progressShown) {
        continue;
      }
      if (now < measureFrom) {
        err.printf(Locale.ROOT, "\r  warming up %s   ", Durations.format(Duration.ofNanos(measureFrom - now)));
      } else if (now < end) {
        long ops = 0;
        for (int t = 0; t < threads; t++) {
          ops += progress.get(t * SLOT);
        }
        double rate = (ops - lastOps) / Math.max(1e-9, (now - lastAt) / 1e9);
        err.printf(Locale.ROOT, "\r  %5.1fs / %s   %,d ops   %,.0f ops/s   ", (now - measureFrom) / 1e9,
            Durations.format(duration), ops, rate);
        lastOps = ops;
        lastAt = now;
      }
      err.flush();
    }
    long stoppedAt = System.nanoTime();
    if (progressShown) {
      err.print("\r" + " ".repeat(72) + "\r");
      err.flush();
    }
    for (int t = 0; t < threads; t++) {
      result.latency.add(histograms[t]);
      result.ops += counts[t][0];
      result.allowed += counts[t][1];
      result.errors += counts[t][2];
    }
    // stopped early, the rate is over the time it ran
    result.seconds = Math.max(0, Math.min(stoppedAt, end) - measureFrom) / 1e9;
    return result;
  }

  /**
   * Whether stdout and stderr are both a terminal, where a line redrawn with {@code \r} reads as
   * progress. On Linux {@code /proc} tells for each of the two, so that {@code tally bench 2>log}
   * and {@code tally bench >out} write no redraws; elsewhere the JDK's console says so for stdout.
   */
  // Before JDK 22, a null console is exactly "not a terminal"; from 22 on, isTerminal() says.
  @SuppressWarnings("SystemConsoleNull")
  static boolean terminal() {
    Path fds = Path.of("/proc/self/fd");
    if (Files.isDirectory(fds)) {
      for (String fd : new String[] {"1", "2"}) {
        try {
          String target = Files.readSymbolicLink(fds.resolve(fd)).toString();
          if (!target.startsWith("/dev/pts/") && !target.startsWith("/dev/tty")) {
            return false;
          }
        } catch (IOException | UnsupportedOperationException e) {
          return false;
        }
      }
      return true;
    }
    Console console = System.console();
    if (console == null) {
      return false; // JDK 17 to 21: stdin or stdout is not a terminal
    }
    try { // JDK 22 and later always have a console, and say whether it is a terminal
      return (Boolean) Console.class.getMethod("isTerminal").invoke(console);
    } catch (ReflectiveOperationException e) {
      return true;
    }
  }

  private void print(Result r, String uri) throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    Histogram h = r.latency;
    double rate = r.seconds == 0 ? 0 : r.ops / r.seconds;
    String store = uri.split(":", 2)[0];
    if (root.json) {
      ObjectNode o = new ObjectMapper().createObjectNode();
      o.put("workload", workload.label());
      o.put("store", store);
      o.put("threads", threads);
      o.put("durationSeconds", r.seconds);
      o.put("ops", r.ops);
      o.put("opsPerSecond", Math.round(rate));
      if (workload == Workload.LIMITER) {
        o.put("allowed", r.allowed);
        o.put("denied", r.ops - r.allowed - r.errors);
      }
      o.put("errors", r.errors);
      ObjectNode lat = o.putObject("latencyNanos");
      lat.put("p50", h.getValueAtPercentile(50));
      lat.put("p99", h.getValueAtPercentile(99));
      lat.put("p999", h.getValueAtPercentile(99.9));
      lat.put("max", h.getMaxValue());
      lat.put("mean", Math.round(h.getMean()));
      out.println(new ObjectMapper().writeValueAsString(o));
    } else {
      out.printf(Locale.ROOT, "%-10s %-6s %7s %8s %12s %12s %9s %9s %9s %9s%n", "workload", "store",
          "threads", "duration", "ops", "ops/s", "p50", "p99", "p99.9", "max");
      out.printf(Locale.ROOT, "%-10s %-6s %7d %8s %12d %12.0f %9s %9s %9s %9s%n", workload.label(),
          store, threads, Durations.format(Duration.ofMillis(Math.round(r.seconds * 1000))), r.ops, rate, nanos(h.getValueAtPercentile(50)),
          nanos(h.getValueAtPercentile(99)), nanos(h.getValueAtPercentile(99.9)), nanos(h.getMaxValue()));
      if (workload == Workload.LIMITER) {
        out.printf(Locale.ROOT, "allowed %d, denied %d%n", r.allowed, r.ops - r.allowed - r.errors);
      }
    }
    if (r.errors > 0) {
      Throwable f = r.failure.get();
      root.note("tally bench: " + r.errors + " operations failed; the first: "
          + (f == null ? "?" : f.getMessage()));
    }
    out.flush();
  }

  /** 850ns, 12.3us, 1.25ms, 2.1s. */
  static String nanos(long n) {
    return n < 1_000 ? n + "ns" : n < 1_000_000 ? String.format(Locale.ROOT, "%.1fus", n / 1e3)
        : n < 1_000_000_000 ? String.format(Locale.ROOT, "%.2fms", n / 1e6)
        : String.format(Locale.ROOT, "%.2fs", n / 1e9);
  }
}
