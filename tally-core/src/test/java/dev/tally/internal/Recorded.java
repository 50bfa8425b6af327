package dev.tally.internal;

import dev.tally.internal.CounterModel.Op;

/**
 * One completed operation of a concurrent history: which thread ran it, what it was, what it
 * returned, and {@link System#nanoTime()} just before the call and just after it returned. The
 * operation took effect, if atomically, somewhere between the two.
 */
record Recorded(int thread, Op op, Object result, long invokedAt, long returnedAt) {

  Recorded {
    if (returnedAt < invokedAt) {
      throw new IllegalArgumentException("returned before invoked: " + invokedAt + " > " + returnedAt);
    }
  }

  /** Whether this returned before {@code other} was invoked, so must take effect first. */
  boolean precedes(Recorded other) {
    return returnedAt < other.invokedAt;
  }

  @Override
  public String toString() {
    return "T" + thread + " " + op + " -> " + result;
  }
}
