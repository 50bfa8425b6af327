package dev.tally.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.Counters;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.server.http.LimitSpec;
import dev.tally.server.http.Problem;
import dev.tally.server.http.Specs;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code tally bench}: N threads run one workload against the store through the public API for
 * a fixed time; each operation is timed into a per-thread HdrHistogram (merged at the end), and
 * a progress line is redrawn on stderr every second.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Measure the store through the library: operations per second and latency percentiles.",
        "Workloads: incr-one (every thread increments one key), incr-many (random keys out",
        "of --keys), limiter (tryAcquire on one shared token bucket, --limit)."})
final class BenchCommand implements Callable<Integer> {
  private static final int SLOT = 16; // longs per thread in the progress array: no false sharing

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
      converter = Converters.DurationConverter.class, description = "How long to measure (default 10s).")
  Duration duration;

  @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "1s",
      converter = Converters.DurationConverter.class,
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
      for (Workload w : Workload.values()) {
        if (w.label().equals(value)) {
          return w;
        }
      }
      throw new picocli.CommandLine.TypeConversionException("'" + value
          + "' is not a workload: expected incr-one, incr-many or limiter");
    }
  }

  /** One operation of the workload; returns whether a limiter allowed it (true otherwise). */
  @FunctionalInterface
  private interface Op {
    boolean run(ThreadLocalRandom random);
  }

  @Override
  public Integer call() throws Exception {
    if (threads < 1 || keys < 1 || duration.isZero()) {
      throw new IllegalArgumentException("--threads, --keys and --duration must be positive");
    }
    PrintWriter err = spec.commandLine().getErr();
    try (Tally tally = Tally.open(root.store)) {
      Op op = op(tally);
      Result r = measure(op, err);
      print(r);
      if (r.ops == 0 && r.failure.get() != null) {
        return Problem.of(r.failure.get()).exitCode();
      }
      return 0;
    }
  }

  private Op op(Tally tally) {
    Counters counters = tally.counters();
    switch (workload) {
      case INCR_ONE -> {
        return random -> {
          counters.incr("bench:one");
          return true;
        };
      }
      case INCR_MANY -> {
        String[] names = new String[keys];
        for (int i = 0; i < keys; i++) {
          names[i] = "bench:many:" + i;
        }
        return random -> {
          counters.incr(names[random.nextInt(names.length)]);
          return true;
        };
      }
      case LIMITER -> {
        RateLimiter limiter = tally.limiter("bench:limiter",
            LimitSpec.parse(LimitSpec.Kind.TOKEN_BUCKET, limit, "default").limit());
        limiter.reset();
        return random -> limiter.tryAcquire();
      }
      default -> throw new AssertionError(workload);
    }
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
        while (now < end) {
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
      if (now < measureFrom) {
        err.printf(Locale.ROOT, "\r  warming up %s   ", Specs.format(Duration.ofNanos(measureFrom - now)));
      } else if (now < end) {
        long ops = 0;
        for (int t = 0; t < threads; t++) {
          ops += progress.get(t * SLOT);
        }
        double rate = (ops - lastOps) / Math.max(1e-9, (now - lastAt) / 1e9);
        err.printf(Locale.ROOT, "\r  %5.1fs / %s   %,d ops   %,.0f ops/s   ", (now - measureFrom) / 1e9,
            Specs.format(duration), ops, rate);
        lastOps = ops;
        lastAt = now;
      }
      err.flush();
    }
    err.print("\r" + " ".repeat(72) + "\r");
    err.flush();
    for (int t = 0; t < threads; t++) {
      result.latency.add(histograms[t]);
      result.ops += counts[t][0];
      result.allowed += counts[t][1];
      result.errors += counts[t][2];
    }
    result.seconds = measureNanos / 1e9;
    return result;
  }

  private void print(Result r) throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    Histogram h = r.latency;
    double rate = r.ops / r.seconds;
    String store = root.store.split(":", 2)[0];
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
          store, threads, Specs.format(duration), r.ops, rate, nanos(h.getValueAtPercentile(50)),
          nanos(h.getValueAtPercentile(99)), nanos(h.getValueAtPercentile(99.9)), nanos(h.getMaxValue()));
      if (workload == Workload.LIMITER) {
        out.printf(Locale.ROOT, "allowed %d, denied %d%n", r.allowed, r.ops - r.allowed - r.errors);
      }
    }
    if (r.errors > 0) {
      Throwable f = r.failure.get();
      spec.commandLine().getErr().println("tally bench: " + r.errors + " operations failed; the first: "
          + (f == null ? "?" : f.getMessage()));
    }
    out.flush();
  }

  /** 850ns, 12.3us, 1.25ms, 2.1s. */
  static String nanos(long n) {
    if (n < 1_000) {
      return n + "ns";
    }
    if (n < 1_000_000) {
      return String.format(Locale.ROOT, "%.1fus", n / 1e3);
    }
    if (n < 1_000_000_000) {
      return String.format(Locale.ROOT, "%.2fms", n / 1e6);
    }
    return String.format(Locale.ROOT, "%.2fs", n / 1e9);
  }
}
