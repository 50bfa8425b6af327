package dev.tally.internal;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * This process's waiting acquirers of concurrency limits, one line per key.
 *
 * <p>Why a line and not every waiter polling the store: a release in this process wakes the head
 * of the line at once (the condition), and only the head asks the store, so N waiters cost one
 * store call per release or backoff, not N, and they are served in arrival order. A release in
 * another process cannot signal here; the head finds it by its bounded backoff.
 */
final class ConcurrencyWaiters {
  private final ConcurrentHashMap<String, Line> lines = new ConcurrentHashMap<>();

  /** The line of {@code key}, created on first use. */
  Line line(String key) {
    return lines.computeIfAbsent(key, k -> new Line());
  }

  /** The line of {@code key} if anyone ever waited on it, else null. */
  Line existing(String key) {
    return lines.get(key);
  }

  /** The waiters of one key. Every field is guarded by {@link #lock}. */
  static final class Line {
    final ReentrantLock lock = new ReentrantLock();
    final Condition changed = lock.newCondition();
    final ArrayDeque<Object> queue = new ArrayDeque<>();
    /** Counts releases, so a head that asked the store while one happened asks again at once. */
    long releases;

    /** A lease of this key was released by this process: wake the head. */
    void released() {
      lock.lock();
      try {
        releases++;
        changed.signalAll();
      } finally {
        lock.unlock();
      }
    }

    /** Whether someone waits: a tryAcquire does not overtake them. */
    boolean busy() {
      lock.lock();
      try {
        return !queue.isEmpty();
      } finally {
        lock.unlock();
      }
    }
  }
}
