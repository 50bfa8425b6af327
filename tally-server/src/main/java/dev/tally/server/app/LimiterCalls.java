package dev.tally.server.app;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.server.async.Lazy;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * Every limiter call the server makes, in one place, each with the operation id of its request
 * (or none). Decisions, refunds and resets go through the limiters' asynchronous API, so no
 * thread waits on them. {@link RateLimiter#reconfigure} and {@link Quota#topUp} have no
 * asynchronous form: they run on a small pool of their own rather than on an event loop, where a
 * limiter over a remote store would stall every connection of that loop. They are rare (an
 * operator's calls), so the pool is small and made on first use. Nor have
 * {@link dev.tally.ConcurrencyLimit} and {@link dev.tally.Reservation}: their steps run on a
 * cached pool of their own, as the library runs a blocking store's, so that a step never queues
 * behind another's (each is one or two store calls; a waiting acquire holds no thread between its
 * attempts).
 */
final class LimiterCalls implements AutoCloseable {
  private final Lazy<ExecutorService> pool =
      new Lazy<>(() -> Executors.newFixedThreadPool(2, Lazy.daemonThreads("tally-limiter-admin-")));
  private final Lazy<ExecutorService> steps =
      new Lazy<>(() -> Executors.newCachedThreadPool(Lazy.daemonThreads("tally-limiter-step-")));

  private static RateLimiter with(RateLimiter limiter, String opId) {
    return opId == null ? limiter : limiter.withOperationId(opId);
  }

  CompletionStage<Decision> decide(RateLimiter limiter, long permits, String opId) {
    return with(limiter, opId).async().decide(permits);
  }

  CompletionStage<Void> refund(RateLimiter limiter, long permits, String opId) {
    return with(limiter, opId).async().refund(permits);
  }

  CompletionStage<Void> reset(RateLimiter limiter, String opId) {
    return with(limiter, opId).async().reset();
  }

  CompletionStage<RateLimiter> reconfigure(RateLimiter limiter, String opId, Limit... limits) {
    return blocking(() -> with(limiter, opId).reconfigure(limits));
  }

  CompletionStage<Void> topUp(Quota quota, long units, String opId) {
    return blocking(() -> {
      ((Quota) with(quota, opId)).topUp(units);
      return null;
    });
  }

  private <T> CompletionStage<T> blocking(Supplier<T> op) {
    return CompletableFuture.supplyAsync(op, pool.get());
  }

  /**
   * One step of a concurrency limit (acquire, renew, release, in use) or of a reservation
   * (reserve, settle), off the caller's thread.
   */
  <T> CompletableFuture<T> step(Supplier<T> op) {
    return CompletableFuture.supplyAsync(op, steps.get());
  }

  @Override
  public void close() {
    for (ExecutorService p : new ExecutorService[] {pool.made(), steps.made()}) {
      if (p != null) {
        p.shutdown();
      }
    }
  }
}
