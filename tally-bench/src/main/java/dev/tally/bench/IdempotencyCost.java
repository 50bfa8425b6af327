package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Tally;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * What an operation id costs: an increment carrying a fresh id against a plain increment of the
 * same key, on one store, in one run, one thread. Beside the two, the cases a store's idempotent
 * path is made of, so the ratio can be explained: the first increment of a new key (an id is a new
 * key on the file store), a plain {@code put} (a locked write), and a replay (the same id again).
 *
 * <pre>
 * mvn -B -q package -pl tally-bench -am -DskipTests
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.IdempotencyCost \
 *     [--uri file:/tmp/idem] [--seconds 3] [--rounds 3] [--retention PT1H]
 * </pre>
 *
 * <p>The cases run in turn, {@code --rounds} times each, so a disturbance by other work on the
 * machine hits every case alike; each round warms up for one second first, then counts calls in
 * batches of 100 between clock reads for {@code --seconds}. Reported per case: the median round's
 * rate and cost per call, and the cost against a plain increment. The default {@code --uri} is a
 * fresh {@code file:} store in a temporary directory, so ids recorded by earlier rounds stay in the
 * table for the retention (an hour by default) as they would in use. Each case checks its counter
 * afterwards: an id applied twice, or an increment lost, fails the run.
 */
public final class IdempotencyCost {
  private static final int BATCH = 100;
  private static final long WARM_UP_NANOS = TimeUnit.SECONDS.toNanos(1);

  private IdempotencyCost() {}

  public static void main(String[] args) throws IOException {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      opts.put(args[i], args[i + 1]);
    }
    double seconds = Double.parseDouble(opts.getOrDefault("--seconds", "3"));
    int rounds = Integer.parseInt(opts.getOrDefault("--rounds", "3"));
    Duration retention = Duration.parse(opts.getOrDefault("--retention", "PT1H"));
    String uri = opts.containsKey("--uri") ? opts.get("--uri")
        : "file:" + Files.createTempDirectory("tally-idempotency").resolve("tally-data");
    System.out.printf(Locale.ROOT, "Idempotency cost on %s: %d round(s) of %.1f s per case, one thread,"
        + " retention %s; load %s%n", uri, rounds, seconds, retention, load());
    try (Tally tally = Tally.builder(uri).operationRetention(retention).build()) {
      Counters c = tally.counters("bench-" + UUID.randomUUID().toString().substring(0, 8));
      String run = UUID.randomUUID().toString().substring(0, 8);
      long[] next = new long[1];
      Map<String, Case> cases = new LinkedHashMap<>();
      cases.put("incr (plain)", new Case("hot", i -> c.incr("hot")));
      cases.put("incr with a fresh id", new Case("idem", i -> c.withOperationId(run + "-" + next[0]++).incr("idem")));
      cases.put("incr of a new key (plain)", new Case(null, i -> c.incr("new:" + run + ":" + i)));
      cases.put("put (plain)", new Case(null, i -> c.put("put", i)));
      c.withOperationId(run + "-replayed").incr("replayed");
      cases.put("replay of an id", new Case(null, i -> c.withOperationId(run + "-replayed").incr("replayed")));
      long[] keySequence = new long[1];
      for (int round = 0; round < rounds; round++) {
        for (Map.Entry<String, Case> e : cases.entrySet()) {
          Case k = e.getValue();
          measure(k, keySequence, WARM_UP_NANOS, false);
          double rate = measure(k, keySequence, (long) (seconds * 1e9), true);
          k.rates.add(rate);
          System.out.printf(Locale.ROOT, "  round %d  %-28s %,14.0f /s  %9.0f ns   [load %s]%n",
              round + 1, e.getKey(), rate, 1e9 / rate, load());
        }
      }
      for (Case k : cases.values()) {
        if (k.counter != null && c.get(k.counter).orElse(0) != k.calls) {
          throw new AssertionError("counter " + k.counter + " is " + c.get(k.counter).orElse(0)
              + " after " + k.calls + " increments");
        }
      }
      if (c.get("replayed").orElse(0) != 1) {
        throw new AssertionError("a replayed id applied again: " + c.get("replayed"));
      }
      double plain = cases.get("incr (plain)").median();
      System.out.println();
      System.out.println("| case | calls/s (median round) | ns per call | cost vs plain incr |");
      System.out.println("|---|---:|---:|---:|");
      for (Map.Entry<String, Case> e : cases.entrySet()) {
        double r = e.getValue().median();
        System.out.printf(Locale.ROOT, "| %s | %,.0f | %,.0f | %.1fx |%n", e.getKey(), r, 1e9 / r, plain / r);
      }
      System.out.println("load average (1, 5, 15 min) at the end: " + load());
    }
  }

  /** One workload: the call, the counter it increments once per call (or null), and its rates. */
  private static final class Case {
    final String counter;
    final LongConsumer call;
    final List<Double> rates = new ArrayList<>();
    long calls;

    Case(String counter, LongConsumer call) {
      this.counter = counter;
      this.call = call;
    }

    double median() {
      double[] r = rates.stream().mapToDouble(Double::doubleValue).sorted().toArray();
      return r[r.length / 2];
    }
  }

  /** Runs {@code k} for {@code nanos}; returns calls per second. */
  private static double measure(Case k, long[] sequence, long nanos, boolean timed) {
    long start = System.nanoTime();
    long ops = 0;
    long now;
    do {
      for (int i = 0; i < BATCH; i++) {
        k.call.accept(sequence[0]++);
      }
      ops += BATCH;
      now = System.nanoTime();
    } while (now - start < nanos);
    k.calls += ops;
    return timed ? ops / ((now - start) / 1e9) : 0;
  }

  /** The 1, 5 and 15 minute load averages. */
  private static String load() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return String.join(" ", Arrays.copyOf(f, 3));
    } catch (IOException | RuntimeException e) {
      return "?";
    }
  }
}
