package dev.tally.redis;

import dev.tally.Decision;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * Concurrent calls on one limiter, sent together: while a call on a limiter is in flight, the
 * acquisitions and peeks that arrive for it wait, and go as one {@code EVALSHA} when it
 * returns, which decides them one after the other at one instant of the server's clock.
 *
 * <p>That is exactly what separate calls arriving at Redis together would get: each is decided
 * by the state machine after the ones before it, none is retried, and none waits longer than
 * the call in flight ahead of it. A call alone on its limiter goes at once, as one call, so
 * uncontended limiters see no difference; a hot one costs Redis one script run per round trip
 * instead of one per caller. Only calls with the same limits share a batch (others go at once,
 * on their own), at most {@value #MAX_BATCH}. Refunds, resets, reconfigurations and top-ups
 * always go alone.
 *
 * <p>Lock-free, so that callers of a hot limiter do not queue on a monitor: a caller enqueues
 * itself, then whoever sets the limiter's in-flight flag sends everything queued; whoever
 * completes a call clears the flag and sends what queued meanwhile.
 */
final class LimiterBatches {
  static final int MAX_BATCH = 128;

  /** A call waiting for its batch. */
  record Pending(LimiterCall call, LimiterOperation op, long permits, CompletableFuture<Decision> result) {}

  /** The calls on one limiter: whether one is in flight, and who waits behind it. */
  private static final class Lane {
    final AtomicBoolean inFlight = new AtomicBoolean();
    final ConcurrentLinkedQueue<Pending> waiting = new ConcurrentLinkedQueue<>();
  }

  private final ConcurrentHashMap<String, Lane> lanes = new ConcurrentHashMap<>();
  private final Function<List<Pending>, CompletableFuture<List<Object>>> sender;

  /** @param sender runs the script for a batch (one call: the plain arguments) */
  LimiterBatches(Function<List<Pending>, CompletableFuture<List<Object>>> sender) {
    this.sender = sender;
  }

  static boolean batchable(LimiterOperation op) {
    return op == LimiterOperation.ACQUIRE || op == LimiterOperation.PEEK;
  }

  CompletableFuture<Decision> submit(LimiterCall call, LimiterOperation op, long permits) {
    Pending p = new Pending(call, op, permits, new CompletableFuture<>());
    String key = call.key();
    Lane lane = lanes.computeIfAbsent(key, k -> new Lane());
    lane.waiting.add(p);
    drain(key, lane);
    return p.result;
  }

  /** Sends what waits, unless a call on the limiter is in flight (its completion will). */
  private void drain(String key, Lane lane) {
    while (!lane.waiting.isEmpty() && lane.inFlight.compareAndSet(false, true)) {
      List<Pending> batch = new ArrayList<>();
      List<Pending> others = null;
      Pending p;
      while (batch.size() < MAX_BATCH && (p = lane.waiting.poll()) != null) {
        if (batch.isEmpty() || p.call().limits().equals(batch.get(0).call().limits())) {
          batch.add(p);
        } else {
          if (others == null) {
            others = new ArrayList<>();
          }
          others.add(p);
        }
      }
      if (others != null) {
        for (Pending other : others) {
          send(other.call().key(), null, List.of(other)); // other limits on this key: on their own
        }
      }
      if (batch.isEmpty()) {
        lane.inFlight.set(false); // another caller took them first
        continue;
      }
      send(key, lane, batch);
      return;
    }
    if (lane.waiting.isEmpty() && !lane.inFlight.get()) {
      // Idle: forget the lane. A caller holding it still works through it (its flag and queue
      // are its own); one arriving later makes a new one.
      lanes.remove(key, lane);
    }
  }

  private void send(String key, Lane lane, List<Pending> batch) {
    CompletableFuture<List<Object>> reply;
    try {
      reply = sender.apply(batch);
    } catch (RuntimeException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    reply.whenComplete((values, failure) -> {
      if (lane != null) {
        lane.inFlight.set(false);
        drain(key, lane);
      }
      for (int i = 0; i < batch.size(); i++) {
        CompletableFuture<Decision> result = batch.get(i).result();
        if (failure != null) {
          result.completeExceptionally(failure);
        } else {
          try {
            result.complete(LimiterScript.decision(values, i));
          } catch (RuntimeException e) {
            result.completeExceptionally(e);
          }
        }
      }
    });
  }
}
