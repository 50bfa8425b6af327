package dev.tally.dynamodb;

import dev.tally.BucketFullException;
import dev.tally.StoreTimeoutException;
import dev.tally.Tally;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One client of {@link CrossClientTest}: a store of its own whose threads each try to add to a
 * shared leaky bucket and increment a shared counter a fixed number of times. Also the main
 * class of the child JVMs: it opens its store, prints READY, waits for a line on stdin, runs,
 * and prints its RESULT.
 */
final class ClientWorkload {
  static final long CAPACITY = 100;

  final AtomicInteger granted = new AtomicInteger();
  final AtomicInteger incremented = new AtomicInteger();
  final AtomicInteger gaveUp = new AtomicInteger();

  /** Runs {@code threads} threads of {@code attempts} attempts each on {@code tally}. */
  void run(Tally tally, String bucket, String counter, int threads, int attempts) throws InterruptedException {
    List<Thread> workers = new ArrayList<>();
    List<Throwable> failures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread w = new Thread(() -> {
        try {
          for (int i = 0; i < attempts; i++) {
            tally.counters().incr(counter);
            incremented.incrementAndGet();
            try {
              tally.leakyBucket(bucket, CAPACITY, Duration.ofDays(1)).add(1);
              granted.incrementAndGet();
            } catch (BucketFullException full) {
              // denied: the bucket is full
            } catch (StoreTimeoutException contended) {
              gaveUp.incrementAndGet(); // too many conflicting writes: nothing applied
            }
          }
        } catch (Throwable e) {
          synchronized (failures) {
            failures.add(e);
          }
        }
      });
      w.start();
      workers.add(w);
    }
    for (Thread w : workers) {
      w.join();
    }
    if (!failures.isEmpty()) {
      throw new AssertionError("a worker failed: " + failures.get(0), failures.get(0));
    }
  }

  /** args: uri bucket counter threads attempts */
  public static void main(String[] args) throws Exception {
    try (Tally tally = Tally.open(args[0])) {
      tally.counters().get(args[2]); // warm up the connection
      System.out.println("READY");
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      ClientWorkload w = new ClientWorkload();
      w.run(tally, args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
      System.out.println("RESULT " + w.granted.get() + " " + w.incremented.get() + " " + w.gaveUp.get());
    }
  }
}
