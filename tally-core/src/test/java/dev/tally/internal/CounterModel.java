package dev.tally.internal;

import dev.tally.Counters;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The sequential specification of a map of integer counters, as {@link Counters} documents it:
 * an immutable state and the operations the linearizability checker replays against it.
 *
 * <p>Only what the checked histories use is modelled: integer counters without expiry. Results
 * are plain values so that a recorded result and a modelled one compare with {@code equals}:
 * {@code Long} for new values, {@code Boolean} for add and delete, {@code null} for a missing
 * counter (and for put, which returns nothing), a {@code List<Long>} for a transaction, and a
 * {@link Failure} when the call throws.
 */
final class CounterModel {

  /** An exception a call ends with; part of its result, compared like one. */
  enum Failure {
    KEY_NOT_FOUND,
    OVERFLOW
  }

  /** One operation, as a thread invokes it and as the model replays it. */
  sealed interface Op {}

  /** {@code incr(key, delta, dflt)}: the new value. */
  record Incr(String key, long delta, long dflt) implements Op {
    @Override
    public String toString() {
      return "incr(" + key + ", " + delta + ", " + dflt + ")";
    }
  }

  /** {@code incrExisting(key, delta)}: the new value, or {@link Failure#KEY_NOT_FOUND}. */
  record IncrExisting(String key, long delta) implements Op {
    @Override
    public String toString() {
      return "incrExisting(" + key + ", " + delta + ")";
    }
  }

  /** {@code get(key)}: the value or {@code null}. */
  record Get(String key) implements Op {
    @Override
    public String toString() {
      return "get(" + key + ")";
    }
  }

  /** {@code put(key, value)} without expiry: {@code null}. */
  record Put(String key, long value) implements Op {
    @Override
    public String toString() {
      return "put(" + key + ", " + value + ")";
    }
  }

  /** {@code add(key, value, null)}, set if absent: whether it set. */
  record Add(String key, long value) implements Op {
    @Override
    public String toString() {
      return "add(" + key + ", " + value + ")";
    }
  }

  /** {@code pop(key)}: the value it removed, or {@code null}. */
  record Pop(String key) implements Op {
    @Override
    public String toString() {
      return "pop(" + key + ")";
    }
  }

  /** {@code delete(key)}: whether the key existed. */
  record Delete(String key) implements Op {
    @Override
    public String toString() {
      return "delete(" + key + ")";
    }
  }

  /**
   * A transaction of two increments (default 0), applied together or not at all: both new
   * values, or the failure of the first that fails. The keys may be the same.
   */
  record IncrBoth(String key1, long delta1, String key2, long delta2) implements Op {
    @Override
    public String toString() {
      return "tx{incr(" + key1 + ", " + delta1 + "); incr(" + key2 + ", " + delta2 + ")}";
    }
  }

  /** The state after an operation, and what the operation returned. */
  record Step(CounterModel next, Object result) {}

  private static final CounterModel EMPTY = new CounterModel(new TreeMap<>());

  private final Map<String, Long> values;

  private CounterModel(TreeMap<String, Long> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  static CounterModel empty() {
    return EMPTY;
  }

  static CounterModel of(Map<String, Long> values) {
    return new CounterModel(new TreeMap<>(values));
  }

  /** The counters, by key; unmodifiable. */
  Map<String, Long> values() {
    return values;
  }

  /** Applies {@code op} to this state, which does not change. */
  Step apply(Op op) {
    if (op instanceof Incr o) {
      return increment(o.key(), o.delta(), o.dflt(), true);
    } else if (op instanceof IncrExisting o) {
      return increment(o.key(), o.delta(), 0, false);
    } else if (op instanceof Get o) {
      return new Step(this, values.get(o.key()));
    } else if (op instanceof Put o) {
      return new Step(with(o.key(), o.value()), null);
    } else if (op instanceof Add o) {
      return values.containsKey(o.key())
          ? new Step(this, false)
          : new Step(with(o.key(), o.value()), true);
    } else if (op instanceof Pop o) {
      return new Step(without(o.key()), values.get(o.key()));
    } else if (op instanceof Delete o) {
      return new Step(without(o.key()), values.containsKey(o.key()));
    } else if (op instanceof IncrBoth o) {
      Step first = increment(o.key1(), o.delta1(), 0, true);
      if (first.result() instanceof Failure) {
        return new Step(this, first.result());
      }
      Step second = first.next().increment(o.key2(), o.delta2(), 0, true);
      if (second.result() instanceof Failure) {
        return new Step(this, second.result()); // all or nothing
      }
      return new Step(second.next(), List.of(first.result(), second.result()));
    }
    throw new IllegalArgumentException("not modelled: " + op);
  }

  private Step increment(String key, long delta, long dflt, boolean create) {
    Long current = values.get(key);
    if (current == null && !create) {
      return new Step(this, Failure.KEY_NOT_FOUND);
    }
    long next;
    try {
      next = Math.addExact(current == null ? dflt : current, delta);
    } catch (ArithmeticException e) {
      return new Step(this, Failure.OVERFLOW);
    }
    return new Step(with(key, next), next);
  }

  private CounterModel with(String key, long value) {
    TreeMap<String, Long> next = new TreeMap<>(values);
    next.put(key, value);
    return new CounterModel(next);
  }

  private CounterModel without(String key) {
    if (!values.containsKey(key)) {
      return this;
    }
    TreeMap<String, Long> next = new TreeMap<>(values);
    next.remove(key);
    return new CounterModel(next);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CounterModel m && values.equals(m.values);
  }

  @Override
  public int hashCode() {
    return values.hashCode();
  }

  @Override
  public String toString() {
    return values.toString();
  }
}
