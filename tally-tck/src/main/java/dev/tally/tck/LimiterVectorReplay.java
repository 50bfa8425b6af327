package dev.tally.tck;

import dev.tally.Tally;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.tck.LimiterVectors.Call;
import dev.tally.tck.LimiterVectors.Expected;
import dev.tally.tck.LimiterVectors.Stored;
import dev.tally.tck.LimiterVectors.Vector;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Replays {@link LimiterVectors} against a store: each vector's calls in order, on a store
 * opened on a {@link ManualTimeSource} set to each call's instant (so a store that decides on a
 * server, a Lua script or a SQL function, is handed the caller's clock), straight on the
 * store's SPI ({@link Store#limit}; {@link Store#applyOnce} for a call with an operation id;
 * {@link Store#limitAll} for a joint decision: no key prefix, validation or failure policy in
 * between).
 * Every field of every decision must equal the machine's, or the exception thrown be of the
 * machine's class; and where the store can be read ({@link StateReader}), the words, decision
 * instant and expiry it holds after each call must be the expected ones (after a joint decision,
 * under each of its keys).
 *
 * <p>Vectors are on keys of their own, so several threads replay them at once, each on its own
 * store instance and clock: a port that decides over the network is bound by round trips, not
 * by its CPU. A vector stops at its first disagreement (what follows would only repeat it); the
 * report names the seed, the call and both answers, enough to replay that one vector alone.
 */
public final class LimiterVectorReplay {
  private static final int SHOWN = 5;

  private LimiterVectorReplay() {}

  /** Reads a limiter's state as the store holds it, for the comparisons after each call. */
  @FunctionalInterface
  public interface StateReader {
    /**
     * The state under {@code key}, or null for none; {@link Stored#expiresAt()} null if the
     * store keeps no expiry to compare.
     */
    Stored read(String key) throws Exception;
  }

  /**
   * What a replay did.
   *
   * @param calls how many calls were replayed (up to each vector's first disagreement)
   * @param disagreements how many vectors disagreed with the machine
   * @param shown the first few disagreements, described
   * @param nanos how long the replay took
   */
  public record Result(int vectors, long calls, int disagreements, List<String> shown, long nanos) {
    @Override
    public String toString() {
      return String.format("%,d vectors, %,d calls in %.1f s, %d disagreement(s)%s", vectors, calls, nanos / 1e9,
          disagreements, shown.isEmpty() ? "" : ":\n  " + String.join("\n  ", shown));
    }
  }

  /**
   * Replays {@code vectors} on stores opened by {@code open} from {@code threads} threads;
   * {@code reader} may be null (decisions only).
   */
  public static Result replay(List<Vector> vectors, Function<ManualTimeSource, Tally> open, StateReader reader,
      int threads) {
    long start = System.nanoTime();
    AtomicInteger next = new AtomicInteger();
    AtomicLong calls = new AtomicLong();
    AtomicInteger disagreements = new AtomicInteger();
    List<String> shown = Collections.synchronizedList(new ArrayList<>());
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> running = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        running.add(pool.submit(() -> {
          ManualTimeSource clock = new ManualTimeSource();
          try (Tally tally = open.apply(clock)) {
            Store store = Internals.storeOf(tally);
            for (int i; (i = next.getAndIncrement()) < vectors.size(); ) {
              Vector v = vectors.get(i);
              String why = replay(v, store, clock, reader, calls);
              if (why != null) {
                disagreements.incrementAndGet();
                if (shown.size() < SHOWN) {
                  shown.add(why);
                }
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : running) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while replaying", e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("a replaying thread failed: " + e.getCause(), e.getCause());
    } finally {
      pool.shutdownNow();
    }
    return new Result(vectors.size(), calls.get(), disagreements.get(), List.copyOf(shown), System.nanoTime() - start);
  }

  /** Replays one vector; returns null, or its first disagreement described. */
  private static String replay(Vector v, Store store, ManualTimeSource clock, StateReader reader, AtomicLong calls) {
    for (int i = 0; i < v.size(); i++) {
      Call call = v.calls().get(i);
      Expected expected = v.expected().get(i);
      clock.advanceNanos(call.now() - clock.nanos());
      Object actual;
      try {
        if (call.joint() != null) {
          actual = List.of(store.limitAll(call.joint(), call.permits()));
        } else if (call.operationId() != null) {
          actual = store.applyOnce(OperationId.of(call.operationId()), call.step());
        } else {
          actual = store.limit(call.limiter(), call.operation(), call.permits());
        }
      } catch (RuntimeException e) {
        actual = e.getClass();
      }
      calls.incrementAndGet();
      String where = "seed " + v.seed() + " (key " + v.key() + ") call " + i + ": " + call;
      if (!expected.answer().equals(actual)) {
        return where + "\n    expected " + describe(expected.answer()) + "\n    but got  " + describe(actual);
      }
      if (reader != null) {
        String differs = compare(expected.state(), read(reader, v.key()), call.now());
        if (differs != null) {
          return where + ", answered as expected, but the stored state " + differs;
        }
        for (int k = 0; k < expected.others().size(); k++) {
          String key = call.joint().get(k + 1).key();
          differs = compare(expected.others().get(k), read(reader, key), call.now());
          if (differs != null) {
            return where + ", answered as expected, but the stored state of " + key + " " + differs;
          }
        }
      }
    }
    return null;
  }

  private static Stored read(StateReader reader, String key) {
    try {
      return reader.read(key);
    } catch (Exception e) {
      throw new IllegalStateException("reading " + key + " failed", e);
    }
  }

  /** Null if {@code held} is what {@code expected} says (null: nothing live at {@code now}). */
  private static String compare(Stored expected, Stored held, long now) {
    if (expected == null) {
      boolean none = held == null || (held.expiresAt() != null && held.expiresAt().compareTo(BigInteger.valueOf(now)) <= 0);
      return none ? null : "is " + held + ", expected none live";
    }
    if (held == null) {
      return "is missing, expected " + expected;
    }
    Stored want = held.expiresAt() == null ? new Stored(expected.decidedAt(), expected.words(), null) : expected;
    return want.equals(held) ? null : "is " + held + "\n    expected " + want;
  }

  private static String describe(Object answer) {
    return String.valueOf(answer);
  }
}
