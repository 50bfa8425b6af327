package dev.tally.internal;

import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * Runs a property: a check on many generated values ({@link Gen}), each from its own seed, so a
 * failure names the one value and the seed that reproduce it.
 *
 * <p>The run's seed is random unless {@code -Dtally.seed=N} fixes it; try {@code i} draws from
 * {@code seed + i}. On failure the error says the seed, the try and the value, and the same seed
 * replays the same values. Nothing shrinks a failing value: the checks say at which step of a
 * timeline they failed, which is what a smaller example would show.
 *
 * <p>{@link #collect} counts how often each outcome of interest came up during a run (denials,
 * buckets run dry), and {@link #forAll} fails a run in which an event collected as yes or no
 * never happened: a generator that never reaches a case tests nothing about it.
 */
final class Property {
  private static final ThreadLocal<Map<String, Map<Object, LongAdder>>> STATS = new ThreadLocal<>();

  private Property() {}

  /** Checks {@code check} on {@code tries} values of {@code gen}. */
  static <T> void forAll(int tries, Gen<T> gen, Consumer<? super T> check) {
    long seed = Long.getLong("tally.seed", new SplittableRandom().nextLong());
    Map<String, Map<Object, LongAdder>> stats = new ConcurrentHashMap<>();
    STATS.set(stats);
    try {
      for (int i = 0; i < tries; i++) {
        T value = gen.next(new SplittableRandom(seed + i));
        try {
          check.accept(value);
        } catch (RuntimeException | AssertionError e) {
          throw new AssertionError("failed on try " + (i + 1) + " of " + tries + " (replay all with -Dtally.seed="
              + seed + "): " + e.getMessage() + "\n  value: " + value, e);
        }
      }
    } finally {
      STATS.remove();
    }
    for (Map.Entry<String, Map<Object, LongAdder>> e : stats.entrySet()) {
      Map<Object, Long> counts = new TreeMap<>();
      e.getValue().forEach((k, v) -> counts.put(String.valueOf(k), v.sum()));
      System.out.println("  " + e.getKey() + ": " + counts);
      boolean event = e.getValue().keySet().stream().allMatch(k -> k instanceof Boolean);
      if (event && !e.getValue().containsKey(true) && tries >= 100) {
        throw new AssertionError("'" + e.getKey() + "' never happened in " + tries + " tries (seed " + seed
            + "): the generator does not reach that case, so nothing here tests it");
      }
    }
  }

  /** Counts {@code value} under {@code label} for the running {@link #forAll}, if any. */
  static void collect(String label, Object value) {
    Map<String, Map<Object, LongAdder>> stats = STATS.get();
    if (stats != null) {
      stats.computeIfAbsent(label, k -> new ConcurrentHashMap<>()).computeIfAbsent(value, k -> new LongAdder())
          .increment();
    }
  }
}
