package dev.tally.internal;

import dev.tally.internal.CounterModel.Op;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;

/**
 * A concurrent history: every operation some threads ran, with invocation and response times.
 * Each thread records into its own {@link Log} (no shared structure to serialize the threads
 * on), and the logs are merged once the threads are done.
 */
final class History {
  private final List<Recorded> ops;

  History(List<Recorded> ops) {
    List<Recorded> sorted = new ArrayList<>(ops);
    sorted.sort(Comparator.comparingLong(Recorded::invokedAt));
    this.ops = List.copyOf(sorted);
  }

  static History of(Recorded... ops) {
    return new History(List.of(ops));
  }

  /** Merges the logs of threads that have finished. */
  static History merge(List<Log> logs) {
    List<Recorded> all = new ArrayList<>();
    for (Log log : logs) {
      all.addAll(log.ops);
    }
    return new History(all);
  }

  /** The operations, by invocation time. */
  List<Recorded> ops() {
    return ops;
  }

  int size() {
    return ops.size();
  }

  /**
   * How many pairs of operations overlap in time: the pairs whose order the checker has to
   * work out. A trial with none tested nothing concurrent.
   */
  int overlappingPairs() {
    int pairs = 0;
    for (int i = 0; i < ops.size(); i++) {
      for (int j = i + 1; j < ops.size(); j++) {
        Recorded a = ops.get(i);
        Recorded b = ops.get(j);
        if (!a.precedes(b) && !b.precedes(a)) {
          pairs++;
        }
      }
    }
    return pairs;
  }

  /** A timeline, one operation a line, times in microseconds from the first invocation. */
  @Override
  public String toString() {
    long origin = ops.isEmpty() ? 0 : ops.get(0).invokedAt();
    StringBuilder sb = new StringBuilder();
    for (Recorded r : ops) {
      sb.append(String.format("  [%9.3f .. %9.3f us] %s%n",
          (r.invokedAt() - origin) / 1e3, (r.returnedAt() - origin) / 1e3, r));
    }
    return sb.toString();
  }

  /** The operations of one thread, recorded by that thread alone. */
  static final class Log {
    private final int thread;
    private final List<Recorded> ops = new ArrayList<>();

    Log(int thread) {
      this.thread = thread;
    }

    /** Runs {@code op} through {@code call}, timing it, and records it with its result. */
    Object call(Op op, Function<Op, Object> call) {
      long invokedAt = System.nanoTime();
      Object result = call.apply(op);
      long returnedAt = System.nanoTime();
      ops.add(new Recorded(thread, op, result, invokedAt, returnedAt));
      return result;
    }
  }
}
