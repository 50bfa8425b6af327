package dev.tally.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Decides whether a concurrent {@link History} of counter operations is linearizable with
 * respect to {@link CounterModel}.
 *
 * <h2>What it proves</h2>
 *
 * A history is linearizable if its operations can be put in one sequential order that
 * <ol>
 *   <li>respects real time: an operation that returned before another was invoked comes first;
 *   <li>is legal: replaying the order on the sequential model, from the initial state, gives
 *       every operation exactly the result it returned in the history.
 * </ol>
 * That is what "each operation is atomic" means for a store shared by threads: every call
 * behaves as if it took effect at a single instant between its invocation and its response.
 * When this checker says yes, it has found such an order (the witness); when it says no, it
 * has tried every order that respects real time, so no such order exists and the store broke
 * atomicity in that run. The answer is exact for the history given: a proof, by exhaustive
 * search, about one observed execution.
 *
 * <h2>How</h2>
 *
 * Wing and Gong's search with Lowe's just-in-time refinement and memoization (the algorithm of
 * Lowe, "Testing for linearizability", 2017, as also used by Knossos and Porcupine). The
 * invocations and responses are laid out in time order. Scanning from the front, any operation
 * whose invocation comes before the first pending response may be linearized next: if the model
 * agrees with its result, it is removed from the list and the scan restarts; reaching a
 * response whose operation is not yet linearized means that prefix was a dead end, so the
 * search undoes the last choice and tries the next candidate. A set of (operations linearized,
 * model state) pairs already explored cuts the search: two prefixes that linearized the same
 * operations into the same state have the same futures.
 *
 * <h2>Limits</h2>
 *
 * <ul>
 *   <li>It checks the histories it is given, not the implementation: executions the test never
 *       produced (other schedules, more threads, more keys, longer runs) are not covered. It is
 *       testing, however exact its verdict.
 *   <li>Times are read outside the call, so every interval is a little wider than the real one.
 *       That only admits more orders: it can hide a violation narrower than the recording
 *       overhead, never invent one. It assumes {@link System#nanoTime()} is one clock for all
 *       threads, as it is on Linux.
 *   <li>It is only as right as {@link CounterModel}, which covers integer counters without
 *       expiry; floating values, ttl, touch and keys are not modelled, nor are operations that
 *       never returned.
 *   <li>The search is exponential in the number of overlapping operations in the worst case;
 *       memoization makes short histories (a few dozen operations) instant.
 * </ul>
 */
final class LinearizabilityChecker {
  private LinearizabilityChecker() {}

  /** The answer: the witness order if linearizable, otherwise an explanation. */
  record Verdict(boolean linearizable, List<Recorded> witness, String explanation) {
    @Override
    public String toString() {
      return explanation;
    }
  }

  /** An invocation or a response, in a doubly linked list ordered by time. */
  private static final class Entry {
    final int id;
    final Recorded op;
    final long time;
    final boolean invocation;
    Entry match; // an invocation's response
    Entry prev;
    Entry next;

    Entry(int id, Recorded op, boolean invocation) {
      this.id = id;
      this.op = op;
      this.invocation = invocation;
      this.time = invocation ? op.invokedAt() : op.returnedAt();
    }

    /** The head of the list, before every entry. */
    static Entry head() {
      return new Entry(-1, new Recorded(-1, null, null, Long.MIN_VALUE, Long.MIN_VALUE), false);
    }
  }

  /** A linearized operation and the state before it, to undo the choice. */
  private record Choice(Entry entry, CounterModel before) {}

  /** An explored prefix: which operations it linearized and the state they left. */
  private record Explored(BitSet linearized, CounterModel state) {}

  static Verdict check(CounterModel initial, History history) {
    Entry head = timeline(history.ops());
    CounterModel state = initial;
    BitSet linearized = new BitSet();
    Set<Explored> explored = new HashSet<>();
    Deque<Choice> choices = new ArrayDeque<>();
    List<Recorded> longest = List.of();

    Entry entry = head.next;
    while (head.next != null) {
      if (entry != null && entry.invocation) {
        CounterModel.Step step = state.apply(entry.op.op());
        if (Objects.equals(step.result(), entry.op.result())) {
          BitSet next = (BitSet) linearized.clone();
          next.set(entry.id);
          if (explored.add(new Explored(next, step.next()))) {
            choices.push(new Choice(entry, state));
            state = step.next();
            linearized = next;
            lift(entry);
            entry = head.next;
            continue;
          }
        }
        entry = entry.next;
      } else {
        // A response whose operation could not be placed before it: undo the last choice.
        if (choices.size() > longest.size()) {
          longest = order(choices);
        }
        if (choices.isEmpty()) {
          return new Verdict(false, List.of(), "not linearizable from " + initial + ":\n" + history
              + "the longest legal order found (" + longest.size() + " of " + history.size()
              + " operations):\n" + lines(longest));
        }
        Choice last = choices.pop();
        state = last.before();
        linearized = (BitSet) linearized.clone();
        linearized.clear(last.entry().id);
        unlift(last.entry());
        entry = last.entry().next;
      }
    }
    List<Recorded> witness = order(choices);
    return new Verdict(true, witness, "linearizable from " + initial + " as:\n" + lines(witness));
  }

  /** The history as a list of invocations and responses; returns its head (a sentinel). */
  private static Entry timeline(List<Recorded> ops) {
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < ops.size(); i++) {
      Entry call = new Entry(i, ops.get(i), true);
      Entry ret = new Entry(i, ops.get(i), false);
      call.match = ret;
      entries.add(call);
      entries.add(ret);
    }
    // At equal times an invocation goes first: the two operations count as concurrent, which
    // is the cautious reading of a tie.
    entries.sort((a, b) -> a.time != b.time
        ? Long.compare(a.time, b.time)
        : Boolean.compare(!a.invocation, !b.invocation));
    Entry head = Entry.head();
    Entry prev = head;
    for (Entry e : entries) {
      prev.next = e;
      e.prev = prev;
      prev = e;
    }
    return head;
  }

  /** Removes an invocation and its response from the list; {@link #unlift} puts them back. */
  private static void lift(Entry call) {
    unlink(call);
    unlink(call.match);
  }

  private static void unlift(Entry call) {
    relink(call.match);
    relink(call);
  }

  private static void unlink(Entry e) {
    e.prev.next = e.next;
    if (e.next != null) {
      e.next.prev = e.prev;
    }
  }

  private static void relink(Entry e) {
    e.prev.next = e;
    if (e.next != null) {
      e.next.prev = e;
    }
  }

  private static List<Recorded> order(Deque<Choice> choices) {
    List<Recorded> order = new ArrayList<>();
    choices.descendingIterator().forEachRemaining(c -> order.add(c.entry().op));
    return order;
  }

  private static String lines(List<Recorded> ops) {
    StringBuilder sb = new StringBuilder();
    for (Recorded r : ops) {
      sb.append("  ").append(r).append('\n');
    }
    return sb.toString();
  }
}
