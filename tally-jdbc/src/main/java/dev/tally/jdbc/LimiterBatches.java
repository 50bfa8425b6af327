package dev.tally.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Combines rate limiter calls that wait at the same time into batches, each decided by one
 * statement on one connection.
 *
 * <p>A call queues itself, then tries to lead: a leader takes whatever is queued (its own call,
 * unless another leader already took it, and up to {@link #MAX} in all) and runs it as one batch.
 * A call that finds a leader's place free therefore goes at once, alone if nobody else is
 * waiting: batching adds no wait to a lone caller. Only when every place is taken does a call
 * wait, and then for the next leader, which takes it together with the others that queued
 * meanwhile: the busier the store, the bigger the batches, and the fewer statements, commits and
 * round trips per decision.
 *
 * @param <T> a queued call
 */
final class LimiterBatches<T extends LimiterBatches.Waiter> {
  /** The most calls one statement decides. */
  static final int MAX = 64;

  /** A queued call: completed (and its thread woken) by whichever leader ran it. */
  abstract static class Waiter {
    final Thread thread = Thread.currentThread();
    private volatile boolean done;

    /** Marks the call answered and wakes its caller; the answer must be set before. */
    final void complete() {
      done = true;
      LockSupport.unpark(thread);
    }

    final boolean done() {
      return done;
    }
  }

  /** Runs one batch; must complete every call in it, also when it fails. */
  @FunctionalInterface
  interface Runner<T> {
    void run(List<T> batch);
  }

  private final ConcurrentLinkedQueue<T> queue = new ConcurrentLinkedQueue<>();
  private final Semaphore leaders;
  private final Runner<T> runner;
  private final AtomicInteger largest = new AtomicInteger();
  private final AtomicInteger running = new AtomicInteger();

  /** {@code inFlight}: how many batches may run at once (each holds a connection while it runs). */
  LimiterBatches(int inFlight, Runner<T> runner) {
    this.leaders = new Semaphore(inFlight);
    this.runner = runner;
  }

  /** Returns once {@code call} is completed, by this thread or another. */
  void submit(T call) {
    queue.add(call);
    boolean interrupted = false;
    while (!call.done()) {
      if (leaders.tryAcquire()) {
        try {
          List<T> batch = drain();
          if (!batch.isEmpty()) {
            if (batch.size() > largest.get()) {
              largest.accumulateAndGet(batch.size(), Math::max);
            }
            running.addAndGet(batch.size());
            try {
              runner.run(batch);
            } finally {
              running.addAndGet(-batch.size());
            }
          }
        } finally {
          leaders.release();
        }
        // A place is free again: hand it to the oldest waiting call, which may be asleep.
        wakeHead();
      } else {
        LockSupport.park(this);
        // JDBC does not stop for an interrupt, and the call may already be in a batch: finish
        // waiting, and leave the interrupt for the caller to see.
        interrupted |= Thread.interrupted();
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private List<T> drain() {
    List<T> batch = new ArrayList<>(Math.min(MAX, 8));
    T next;
    while (batch.size() < MAX && (next = queue.poll()) != null) {
      batch.add(next);
    }
    if (batch.size() == MAX) {
      wakeHead(); // more than one batch waits: another leader can take the rest meanwhile
    }
    return batch;
  }

  /** How many calls wait for a leader now. */
  int waiting() {
    return queue.size();
  }

  /** How many calls are in batches that run now. */
  int running() {
    return running.get();
  }

  /** The most calls one batch has held so far. */
  int largest() {
    return largest.get();
  }

  private void wakeHead() {
    T head = queue.peek();
    if (head != null) {
      LockSupport.unpark(head.thread);
    }
  }
}
