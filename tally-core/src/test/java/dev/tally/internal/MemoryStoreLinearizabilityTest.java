package dev.tally.internal;

import dev.tally.Tally;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.tally.internal.ConcurrentTrials.Shape;
import dev.tally.internal.ConcurrentTrials.Trial;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every history that threads produce on {@code mem:} through the public API is linearizable:
 * each incr, incrExisting, get, put, add, pop, delete and two-key transaction takes effect at
 * one instant between its call and its return. See {@link LinearizabilityChecker} for what
 * that does and does not prove.
 */
class MemoryStoreLinearizabilityTest {
  private static final long SEED = Long.getLong("tally.lin.seed", 20261129L);
  /** Multiplies the number of trials, for a longer search: {@code -Dtally.lin.scale=50}. */
  private static final int SCALE = Integer.getInteger("tally.lin.scale", 1);

  private static ConcurrentTrials trials;

  @BeforeAll
  static void startThreads() {
    trials = new ConcurrentTrials(4);
  }

  @AfterAll
  static void stopThreads() {
    trials.close();
  }

  @Test
  void oneHotKey() {
    runAll(300, new Shape(4, 6, List.of("a"), false), "root");
  }

  @Test
  void twoKeysWithTransactionsAcrossThem() {
    runAll(300, new Shape(3, 8, List.of("a", "b"), false), "root");
  }

  /** Values at the 64-bit limits: overflow refusals, and Long.MIN_VALUE as a real value. */
  @Test
  void valuesNextToTheLimits() {
    runAll(200, new Shape(3, 6, List.of("a", "b"), true), "root");
  }

  /** The same through a group, whose keys the store sees prefixed. */
  @Test
  void throughAGroup() {
    runAll(100, new Shape(4, 5, List.of("a", "b"), false), "views");
  }

  /**
   * Runs at least {@code count} trials, and more while fewer than half of them had operations
   * that overlapped in time (on a busy machine threads often run one after the other), for at
   * most a few seconds.
   */
  private static void runAll(int count, Shape shape, String group) {
    count *= SCALE;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4) * SCALE;
    int trialsRun = 0;
    int concurrent = 0;
    long overlappingPairs = 0;
    while (trialsRun < count || (concurrent < count / 2 && System.nanoTime() < deadline)) {
      long seed = SEED * 1_000_003 + trialsRun;
      Trial trial = trials.run(seed, shape, () -> Tally.open("mem:"),
          tally -> group.equals("root") ? tally.counters() : tally.counters(group));
      trialsRun++;
      if (!trial.verdict().linearizable()) {
        fail("mem: produced a history that is not linearizable (" + shape + ", " + trial + ")");
      }
      int pairs = trial.history().overlappingPairs();
      overlappingPairs += pairs;
      concurrent += pairs > 0 ? 1 : 0;
    }
    System.out.printf("%s: %d histories, all linearizable; %d with overlapping operations,"
        + " %d overlapping pairs in all%n", shape, trialsRun, concurrent, overlappingPairs);
    assertThat(concurrent).as("trials in which operations ran concurrently").isPositive();
  }
}
