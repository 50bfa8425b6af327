package dev.tally.spring;

import dev.tally.Lease;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;

/** The lease a {@link ConcurrencyLimited} call holds, for the code it runs on that call's thread. */
public final class ConcurrencyLeases {
  /** Nested limited calls hold a lease each; the innermost is the current one. */
  private static final ThreadLocal<Deque<Lease>> HELD = ThreadLocal.withInitial(ArrayDeque::new);

  private ConcurrencyLeases() {}

  /**
   * The lease of the innermost {@link ConcurrencyLimited} call running on this thread: its
   * {@link Lease#fencingToken()} is what a guarded resource compares. Empty outside such a call,
   * and in one that runs without a permit because the store failed (fail-open).
   */
  public static Optional<Lease> current() {
    return Optional.ofNullable(HELD.get().peek());
  }

  static void push(Lease lease) {
    HELD.get().push(lease);
  }

  static void pop() {
    Deque<Lease> held = HELD.get();
    held.pop();
    if (held.isEmpty()) {
      HELD.remove();
    }
  }
}
