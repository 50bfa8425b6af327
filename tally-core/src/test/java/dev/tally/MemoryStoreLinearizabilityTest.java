package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.tally.ConcurrentTrials.Shape;
import dev.tally.ConcurrentTrials.Trial;
import java.util.List;
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

  private static void runAll(int count, Shape shape, String group) {
    long overlapping = 0;
    count *= SCALE;
    // On a loaded machine threads interleave less; keep going (up to ten times as long) until
    // some operations did overlap, so the verdict is never vacuous.
    int i = 0;
    for (; i < count || (overlapping == 0 && i < 10 * count); i++) {
      long seed = SEED * 1_000_003 + i;
      Trial trial = trials.run(seed, shape, () -> Tally.open("mem:"),
          tally -> group.equals("root") ? tally.counters() : tally.counters(group));
      if (!trial.verdict().linearizable()) {
        fail("mem: produced a history that is not linearizable (" + shape + ", " + trial + ")");
      }
      overlapping += trial.history().overlappingPairs();
    }
    System.out.printf("%s: %d linearizable histories of %d operations, %d overlapping pairs in all%n",
        shape, i, shape.threads() * shape.opsPerThread(), overlapping);
    assertThat(overlapping).as("operations that ran concurrently").isPositive();
  }
}
