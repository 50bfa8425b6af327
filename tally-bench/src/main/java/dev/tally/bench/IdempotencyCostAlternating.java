package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Tally;
import java.util.Arrays;
import java.util.UUID;

/**
 * {@link IdempotencyCost} for a machine that other work keeps busy: plain and idempotent
 * {@code incr}s on one thread in alternating slices (100 ms each, by default 40 of each), so
 * that both meet the same background load, and the median of each kind's slices is compared.
 *
 * <pre>
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.IdempotencyCostAlternating redis://127.0.0.1:6379/0 [slices]
 * </pre>
 */
public final class IdempotencyCostAlternating {
  private IdempotencyCostAlternating() {}

  public static void main(String[] args) {
    String uri = args.length > 0 ? args[0] : "mem:";
    int slices = args.length > 1 ? Integer.parseInt(args[1]) : 40;
    try (Tally tally = Tally.open(uri)) {
      Counters counters = tally.counters("idem-alt");
      String key = "views:" + UUID.randomUUID();
      String prefix = "alt-" + UUID.randomUUID() + "-";
      long[] next = {0};
      Runnable plain = () -> counters.incr(key);
      Runnable once = () -> counters.withOperationId(prefix + next[0]++).incr(key);
      for (int i = 0; i < 10; i++) { // warm-up
        rate(plain, 100);
        rate(once, 100);
      }
      double[] plainRates = new double[slices];
      double[] onceRates = new double[slices];
      for (int i = 0; i < slices; i++) {
        plainRates[i] = rate(plain, 100);
        onceRates[i] = rate(once, 100);
      }
      double p = median(plainRates);
      double o = median(onceRates);
      System.out.printf("%s: plain incr %.0f/s, idempotent incr %.0f/s (medians of %d alternating 100 ms slices);"
          + " an id costs %.2fx%n", uri, p, o, slices, p / o);
      counters.delete(key);
    }
  }

  private static double rate(Runnable op, long millis) {
    long end = System.nanoTime() + millis * 1_000_000;
    long n = 0;
    long start = System.nanoTime();
    long now;
    do {
      op.run();
      n++;
      now = System.nanoTime();
    } while (now < end);
    return n * 1e9 / (now - start);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }
}
