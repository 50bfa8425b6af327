package dev.tally.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import java.util.function.Function;

/**
 * Concurrent calls on one key, sent together: while a key has as many commands in flight as it
 * may (one or two), the calls that arrive for it wait, and go as one command when one returns.
 *
 * <p>Why: on a hot key, Redis and the connection are not what limits a client; the client's own
 * per-command work is (encoding, the I/O thread's write and read, one reply to dispatch per
 * command). One command for everyone who arrived during the previous round trip costs that once.
 * It is also exactly what those calls would get if they reached Redis together on their own: the
 * command applies them one after the other, in arrival order, none is retried, and none waits
 * longer than the calls in flight ahead of it. A call alone on its key goes at once, as itself,
 * so an uncontended key sees no difference.
 *
 * <p>Callers of a hot key do not queue on a monitor: a caller enqueues itself (lock-free), then
 * whoever claims an in-flight slot of the key sends what is queued; whoever completes a command
 * frees its slot, sends what queued meanwhile, and only then completes the calls it carried (the
 * next round trip is already under way while their callers wake). Only the one or two threads
 * holding a slot ever take from the queue, one at a time, so batches leave, and are applied, in
 * arrival order.
 *
 * @param <C> a waiting call: its key and the future it completes
 * @param <V> the reply of one command
 */
final class Coalescing<C extends Coalescing.Call<?>, V> {
  /** A call that may share a command with others on its key. */
  interface Call<R> {
    String key();

    CompletableFuture<R> result();
  }

  /** Completes every call of a batch from its command's reply (or failure). */
  interface Completer<C, V> {
    void complete(List<C> batch, V reply, Throwable failure);
  }

  /**
   * The calls on one key: how many commands are in flight, and who waits behind them.
   *
   * <p>An idle lane leaves the map, so that keys used once cost nothing later. It must not leave
   * while a call can still join it: that call would be stranded, or a caller's next call would
   * start a second lane and overtake it. So {@code queued} counts the calls in the queue and those
   * about to be added, and a lane is retired only by turning a count of 0 into {@link #RETIRED},
   * with nothing in flight; a call can join only while the count is not {@code RETIRED}.
   */
  private static final class Lane<C> {
    static final int RETIRED = -1;
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger queued = new AtomicInteger();
    final ConcurrentLinkedQueue<C> waiting = new ConcurrentLinkedQueue<>();

    /** Counts a call in, unless the lane is retired. */
    boolean join() {
      for (int n = queued.get(); n != RETIRED; n = queued.get()) {
        if (queued.compareAndSet(n, n + 1)) {
          return true;
        }
      }
      return false;
    }

    /**
     * Retires the lane if nothing is queued and nothing in flight. A command counted in before the
     * count fell to 0 may still be on its way out; then the lane stays.
     */
    boolean retire() {
      if (inFlight.get() != 0 || !queued.compareAndSet(0, RETIRED)) {
        return false;
      }
      if (inFlight.get() == 0) {
        return true;
      }
      queued.set(0); // a command went out meanwhile: its completion will come back here
      return false;
    }
  }

  private final ConcurrentHashMap<String, Lane<C>> lanes = new ConcurrentHashMap<>();
  private final int maxBatch;
  private final int maxInFlight;
  private final BiPredicate<C, C> joins;
  private final Function<List<C>, CompletableFuture<V>> sender;
  private final Completer<C, V> completer;

  /**
   * @param maxInFlight the most commands in flight on one key at a time (the callers arriving
   *     meanwhile queue for the next)
   * @param maxBatch the most calls one command carries
   * @param joins whether a call may share the command of the batch's first call; one that may not
   *     ends the batch and heads the next
   * @param sender sends one command for a batch (a batch of one: the plain call)
   * @param completer completes the batch's calls from the reply
   */
  Coalescing(int maxInFlight, int maxBatch, BiPredicate<C, C> joins, Function<List<C>, CompletableFuture<V>> sender,
      Completer<C, V> completer) {
    this.maxInFlight = maxInFlight;
    this.maxBatch = maxBatch;
    this.joins = joins;
    this.sender = sender;
    this.completer = completer;
  }

  /** Sends {@code call} now, or with the next batch on its key. */
  void submit(C call) {
    String key = call.key();
    for (int spins = 0; ; spins++) {
      Lane<C> lane = lanes.computeIfAbsent(key, k -> new Lane<>());
      if (lane.join()) {
        lane.waiting.add(call);
        drain(key, lane);
        return;
      }
      // Being retired: it leaves the map (or comes back to life) within a few instructions.
      if (spins < 64) {
        Thread.onSpinWait();
      } else {
        Thread.yield();
      }
    }
  }

  private boolean claim(Lane<C> lane) {
    for (int n = lane.inFlight.get(); n < maxInFlight; n = lane.inFlight.get()) {
      if (lane.inFlight.compareAndSet(n, n + 1)) {
        return true;
      }
    }
    return false;
  }

  /** Sends what waits, unless the key's slots are all taken (their completions will). */
  private void drain(String key, Lane<C> lane) {
    while (!lane.waiting.isEmpty() && claim(lane)) {
      boolean sent;
      synchronized (lane) { // one sender at a time takes from the queue: batches leave in arrival order
        List<C> batch = take(lane);
        sent = !batch.isEmpty();
        if (sent) {
          send(key, lane, batch);
        }
      }
      if (sent) {
        return;
      }
      lane.inFlight.decrementAndGet(); // another caller took them first
    }
    if (lane.waiting.isEmpty() && lane.retire()) {
      lanes.remove(key, lane); // idle: a call arriving later makes a new lane
    }
  }

  /**
   * The calls at the head of the queue that may share a command: up to the first one that may
   * not join the first, which heads the next batch, so calls are applied in arrival order.
   */
  private List<C> take(Lane<C> lane) {
    List<C> batch = new ArrayList<>();
    C next;
    while (batch.size() < maxBatch && (next = lane.waiting.peek()) != null
        && (batch.isEmpty() || joins.test(batch.get(0), next))) {
      batch.add(lane.waiting.poll()); // the head just peeked: only the sender polls
      lane.queued.decrementAndGet();
    }
    return batch;
  }

  private void send(String key, Lane<C> lane, List<C> batch) {
    CompletableFuture<V> reply;
    try {
      reply = sender.apply(batch);
    } catch (RuntimeException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    reply.whenComplete((value, failure) -> {
      lane.inFlight.decrementAndGet();
      drain(key, lane);
      try {
        completer.complete(batch, value, failure);
      } catch (RuntimeException e) {
        for (C c : batch) {
          c.result().completeExceptionally(e);
        }
      }
    });
  }
}
