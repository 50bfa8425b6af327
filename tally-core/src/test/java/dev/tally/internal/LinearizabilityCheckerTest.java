package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.tally.internal.AtomicLongMapStore.Flaw;
import dev.tally.internal.ConcurrentTrials.Kind;
import dev.tally.internal.ConcurrentTrials.Shape;
import dev.tally.internal.ConcurrentTrials.Trial;
import dev.tally.internal.CounterModel.Failure;
import dev.tally.internal.CounterModel.Get;
import dev.tally.internal.CounterModel.Incr;
import dev.tally.internal.CounterModel.IncrBoth;
import dev.tally.internal.CounterModel.IncrExisting;
import dev.tally.internal.CounterModel.Pop;
import dev.tally.internal.CounterModel.Put;
import dev.tally.internal.LinearizabilityChecker.Verdict;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The checker on histories with known answers, and on stores with known races. */
class LinearizabilityCheckerTest {

  private static ConcurrentTrials trials;

  @BeforeAll
  static void startThreads() {
    trials = new ConcurrentTrials(4);
  }

  @AfterAll
  static void stopThreads() {
    trials.close();
  }

  private static Recorded op(int thread, CounterModel.Op op, Object result, long from, long to) {
    return new Recorded(thread, op, result, from, to);
  }

  // ------------------------------------------------------------------ hand-written histories

  @Test
  void findsTheOrderOfOverlappingOperations() {
    // T1's incr started later but took effect first; the pop and get come after both.
    History h = History.of(
        op(0, new Incr("a", 1, 0), 2L, 0, 10),
        op(1, new Incr("a", 1, 0), 1L, 2, 8),
        op(1, new Pop("a"), 2L, 12, 20),
        op(0, new Get("a"), null, 22, 30));

    Verdict v = LinearizabilityChecker.check(CounterModel.empty(), h);

    assertThat(v.linearizable()).as(v.explanation()).isTrue();
    assertThat(v.witness()).extracting(Recorded::thread, Recorded::result)
        .containsExactly(
            tuple(1, 1L),
            tuple(0, 2L),
            tuple(1, 2L),
            tuple(0, null));
  }

  @Test
  void rejectsAnIncrementLostToAPop() {
    // The increment saw 5 and made 6, inside the pop's window, yet the pop returned 5 and the
    // key is gone afterwards: the increment happened to nobody.
    History h = History.of(
        op(0, new Pop("a"), 5L, 0, 30),
        op(1, new Incr("a", 1, 0), 6L, 5, 10),
        op(1, new Get("a"), null, 40, 50));

    Verdict v = LinearizabilityChecker.check(CounterModel.of(Map.of("a", 5L)), h);

    assertThat(v.linearizable()).isFalse();
    assertThat(v.explanation()).contains("not linearizable", "T0 pop(a) -> 5");
  }

  @Test
  void respectsRealTime() {
    // A get that starts after a put returned must see it; one that overlaps the put need not.
    Recorded put = op(0, new Put("a", 7), null, 0, 10);
    History after = History.of(put, op(1, new Get("a"), null, 20, 30));
    History overlapping = History.of(put, op(1, new Get("a"), null, 5, 30));

    assertThat(LinearizabilityChecker.check(CounterModel.empty(), after).linearizable()).isFalse();
    assertThat(LinearizabilityChecker.check(CounterModel.empty(), overlapping).linearizable()).isTrue();
  }

  @Test
  void rejectsTwoIncrementsReturningTheSameValue() {
    History h = History.of(
        op(0, new Incr("a", 1, 0), 1L, 0, 10),
        op(1, new Incr("a", 1, 0), 1L, 0, 10));

    assertThat(LinearizabilityChecker.check(CounterModel.empty(), h).linearizable()).isFalse();
  }

  @Test
  void rejectsATransactionSeenHalfApplied() {
    // a and b both start at 0; the get of b returned after the transaction began and before it
    // returned, so it may see b before (0) or after (1), and the get of a that follows it may
    // not then see the state before.
    History consistent = History.of(
        op(0, new IncrBoth("a", 1, "b", 1), List.of(1L, 1L), 0, 100),
        op(1, new Get("b"), 1L, 10, 20),
        op(1, new Get("a"), 1L, 30, 40));
    History torn = History.of(
        op(0, new IncrBoth("a", 1, "b", 1), List.of(1L, 1L), 0, 100),
        op(1, new Get("b"), 1L, 10, 20),
        op(1, new Get("a"), 0L, 30, 40));
    CounterModel zeros = CounterModel.of(Map.of("a", 0L, "b", 0L));

    assertThat(LinearizabilityChecker.check(zeros, consistent).linearizable()).isTrue();
    assertThat(LinearizabilityChecker.check(zeros, torn).linearizable()).isFalse();
  }

  @Test
  void failuresAreResultsToo() {
    // incrExisting failed, so the key was missing at some instant during it: only before the put.
    History h = History.of(
        op(0, new Put("a", 1), null, 0, 10),
        op(1, new IncrExisting("a", 1), Failure.KEY_NOT_FOUND, 5, 20));
    History late = History.of(
        op(0, new Put("a", 1), null, 0, 10),
        op(1, new IncrExisting("a", 1), Failure.KEY_NOT_FOUND, 15, 20));

    assertThat(LinearizabilityChecker.check(CounterModel.empty(), h).linearizable()).isTrue();
    assertThat(LinearizabilityChecker.check(CounterModel.empty(), late).linearizable()).isFalse();
  }

  // ------------------------------------------------------------------ known-broken stores

  // Only the operations the flaw needs: the broken store's transactions are not atomic either,
  // and would be caught first.

  @Test
  void catchesAPopThatReadsThenRemoves() {
    assertCaught(Flaw.POP_READS_THEN_REMOVES, EnumSet.of(Kind.INCR, Kind.POP, Kind.GET));
  }

  @Test
  void catchesAnIncrementThatReadsThenWrites() {
    assertCaught(Flaw.INCR_READS_THEN_WRITES, EnumSet.of(Kind.INCR, Kind.GET));
  }

  /** Runs the harness {@code mem:} passes against a broken store until it is caught. */
  private static void assertCaught(Flaw flaw, Set<Kind> kinds) {
    Shape shape = new Shape(3, 6, List.of("a"), false, kinds);
    int maxTrials = 300;
    for (int i = 0; i < maxTrials; i++) {
      Trial trial = trials.run(7_000L + i, shape, () -> new AtomicLongMapStore(flaw),
          ConcurrentTrials::countersOver);
      if (!trial.verdict().linearizable()) {
        System.out.printf("%s caught after %d trial(s):%n%s%n", flaw, i + 1, trial);
        return;
      }
    }
    throw new AssertionError(flaw + ": " + maxTrials + " trials and every history linearizable;"
        + " the checker (or the harness) misses a known race");
  }
}
