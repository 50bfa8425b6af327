package dev.tally.redis;

import dev.tally.Decision;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Concurrent acquisitions and peeks on one limiter, sent together ({@link Coalescing}): one
 * {@code EVALSHA} decides them one after the other at one instant of the server's clock.
 *
 * <p>That is exactly what separate calls arriving at Redis together would get: each is decided
 * by the state machine after the ones before it. A hot limiter costs Redis one script run per
 * round trip instead of one per caller. Only calls with the same limits share a batch (one with
 * other limits heads the next), at most {@value #MAX_BATCH}. Refunds, resets, reconfigurations
 * and top-ups always go alone.
 */
final class LimiterBatches {
  static final int MAX_BATCH = 128;

  /** A call waiting for its batch; {@code blocking} if its caller waits for it in {@link ReplyWait}. */
  record Pending(LimiterCall call, LimiterOperation op, long permits, boolean blocking,
      CompletableFuture<Decision> result) implements Coalescing.Call<Decision> {
    @Override
    public String key() {
      return call.key();
    }
  }

  private final Coalescing<Pending, List<Object>> coalescing;

  /**
   * @param sender runs the script for a batch (one call: the plain arguments)
   * @param handoff where the completions of a batch of blocking calls go ({@link Handoff})
   */
  LimiterBatches(Function<List<Pending>, CompletableFuture<List<Object>>> sender, Handoff handoff) {
    this.coalescing = new Coalescing<>(1, MAX_BATCH,
        (first, next) -> next.call().version() == first.call().version() && next.call().limits().equals(first.call().limits()),
        sender, (batch, values, failure) -> {
          if (batch.stream().allMatch(Pending::blocking)) {
            handoff.submit(() -> complete(batch, values, failure));
          } else {
            complete(batch, values, failure); // an asynchronous caller's callbacks run here, not on another caller
          }
        });
  }

  static boolean batchable(LimiterOperation op) {
    return op == LimiterOperation.ACQUIRE || op == LimiterOperation.PEEK;
  }

  CompletableFuture<Decision> submit(LimiterCall call, LimiterOperation op, long permits, boolean blocking) {
    Pending p = new Pending(call, op, permits, blocking, new CompletableFuture<>());
    coalescing.submit(p);
    return p.result();
  }

  private static void complete(List<Pending> batch, List<Object> values, Throwable failure) {
    List<Decision> decisions = null;
    if (failure == null) {
      try {
        decisions = LimiterScript.decisions(values);
      } catch (RuntimeException e) {
        failure = e;
      }
    }
    for (int i = 0; i < batch.size(); i++) {
      CompletableFuture<Decision> result = batch.get(i).result();
      if (failure != null) {
        result.completeExceptionally(failure);
      } else if (i < decisions.size()) {
        result.complete(decisions.get(i));
      } else {
        result.completeExceptionally(new IllegalStateException(
            "the limiter script answered " + decisions.size() + " decisions for a batch of " + batch.size()));
      }
    }
  }
}
