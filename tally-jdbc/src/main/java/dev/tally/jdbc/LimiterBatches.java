package dev.tally.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
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
 * <p>No call waits past its own deadline ({@link Waiter#giveUpAt}): one whose time runs out while
 * it waits abandons its place and learns whether its statement was sent ({@link Outcome}). A
 * leader runs its batch within its own call's time (the runner is told whose), so a leader held
 * up by a frozen server fails with its batch rather than holding its own caller longer.
 *
 * @param <T> a queued call
 */
final class LimiterBatches<T extends LimiterBatches.Waiter> {
  /** The most calls one statement decides. */
  static final int MAX = 64;

  /** How a submitted call ended for its caller. */
  enum Outcome {
    /** A leader ran it: its answer is set. */
    ANSWERED,
    /** Its time ran out before any statement carried it: it was not applied. */
    NOT_SENT,
    /** Its time ran out while the statement carrying it was in flight: it may have applied. */
    IN_FLIGHT
  }

  /** A queued call: completed (and its thread woken) by whichever leader ran it. */
  abstract static class Waiter {
    private enum State { WAITING, SENT, ABANDONED }

    final Thread thread = Thread.currentThread();
    /** The instant ({@link System#nanoTime}) the caller stops waiting. */
    final long giveUpAt;
    private final AtomicReference<State> state = new AtomicReference<>(State.WAITING);
    private volatile boolean done;

    Waiter(long giveUpAt) {
      this.giveUpAt = giveUpAt;
    }

    /**
     * Called by the leader just before the statement carrying this call goes out: false if the
     * caller has given up, and the call must be left out (its caller was told it was not sent).
     */
    final boolean send() {
      return state.compareAndSet(State.WAITING, State.SENT);
    }

    /** Marks the call answered and wakes its caller; the answer must be set before. */
    final void complete() {
      done = true;
      LockSupport.unpark(thread);
    }

    final boolean done() {
      return done;
    }

    /** The caller gives up: true if no statement carries the call, and none ever will. */
    final boolean abandon() {
      return state.compareAndSet(State.WAITING, State.ABANDONED);
    }
  }

  /**
   * Runs one batch within the time of {@code leader}, the call whose thread runs it (which may
   * itself be in another batch); must complete every call in it, also when it fails, and call
   * {@link Waiter#send} on each before the statement carrying it goes out.
   */
  @FunctionalInterface
  interface Runner<T> {
    void run(List<T> batch, T leader);
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

  /** Returns once {@code call} is completed, by this thread or another, or its time is over. */
  Outcome submit(T call) {
    queue.add(call);
    boolean interrupted = false;
    try {
      while (!call.done()) {
        long left = call.giveUpAt - System.nanoTime();
        if (left <= 0) {
          return giveUp(call);
        }
        if (leaders.tryAcquire()) {
          try {
            List<T> batch = drain();
            if (!batch.isEmpty()) {
              if (batch.size() > largest.get()) {
                largest.accumulateAndGet(batch.size(), Math::max);
              }
              running.addAndGet(batch.size());
              try {
                runner.run(batch, call);
              } finally {
                running.addAndGet(-batch.size());
              }
            }
          } finally {
            leaders.release();
          }
          // A place is free again: hand it to the oldest waiting call, which may be asleep.
          wakeHead();
          continue;
        }
        LockSupport.parkNanos(this, left);
        // JDBC does not stop for an interrupt, and the call may already be in a batch: wait as
        // long as the call's time allows, and leave the interrupt for the caller to see.
        interrupted |= Thread.interrupted();
      }
      return Outcome.ANSWERED;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private Outcome giveUp(T call) {
    queue.remove(call); // a leader that drains it anyway leaves it out: send() fails
    if (call.abandon()) {
      return Outcome.NOT_SENT;
    }
    return call.done() ? Outcome.ANSWERED : Outcome.IN_FLIGHT;
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
