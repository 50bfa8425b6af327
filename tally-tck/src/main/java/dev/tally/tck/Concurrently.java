package dev.tally.tck;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Runs the same body on many threads released together, and fails loudly if any throws. */
public final class Concurrently {
  private Concurrently() {}

  /** The body of one iteration on one thread. */
  @FunctionalInterface
  public interface Body {
    /** Runs iteration {@code i} of thread {@code thread}. */
    void run(int thread, int i) throws Exception;
  }

  /** Runs {@code iterations} of {@code body} on each of {@code threads} threads; waits at most a minute. */
  public static void run(int threads, int iterations, Body body) {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CyclicBarrier start = new CyclicBarrier(threads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        futures.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < iterations; i++) {
            body.run(thread, i);
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } catch (Exception e) {
      throw new AssertionError("a concurrent worker failed: " + e, e);
    } finally {
      pool.shutdownNow();
    }
  }
}
