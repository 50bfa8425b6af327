package dev.tally.redis;

import dev.tally.Decision;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 * instead of one per caller. Only calls with the same limits share a batch, at most
 * {@value #MAX_BATCH}. Refunds, resets, reconfigurations and top-ups always go alone.
 */
final class LimiterBatches {
  static final int MAX_BATCH = 128;

  /** A call waiting for its batch. */
  record Pending(LimiterCall call, LimiterOperation op, long permits, CompletableFuture<Decision> result) {}

  /** The calls on one limiter: whether one is in flight, and who waits behind it. */
  private static final class Lane {
    boolean inFlight;
    boolean retired;
    final ArrayDeque<Pending> waiting = new ArrayDeque<>();
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
    while (true) {
      Lane lane = lanes.computeIfAbsent(key, k -> new Lane());
      synchronized (lane) {
        if (lane.retired) {
          continue; // it was just emptied and removed: take the next one
        }
        if (lane.inFlight) {
          lane.waiting.add(p);
          return p.result;
        }
        lane.inFlight = true;
      }
      send(key, lane, List.of(p));
      return p.result;
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
      List<Pending> next = next(key, lane);
      if (next != null) {
        send(key, lane, next);
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

  /** The next batch: the oldest waiting call and those behind it with the same limits. */
  private List<Pending> next(String key, Lane lane) {
    synchronized (lane) {
      Pending first = lane.waiting.poll();
      if (first == null) {
        lane.inFlight = false;
        lane.retired = true;
        lanes.remove(key, lane);
        return null;
      }
      List<Pending> batch = new ArrayList<>();
      batch.add(first);
      while (batch.size() < MAX_BATCH && !lane.waiting.isEmpty()
          && lane.waiting.peek().call().limits().equals(first.call().limits())) {
        batch.add(lane.waiting.poll());
      }
      return batch;
    }
  }
}
