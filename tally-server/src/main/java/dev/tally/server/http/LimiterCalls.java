package dev.tally.server.http;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Every limiter call the server makes, in one place. {@link RateLimiter} has only a blocking
 * API for now, so each call runs on a small pool of its own rather than on an event loop: a
 * limiter over a remote store would otherwise stall every connection of that loop. When the
 * limiters gain an asynchronous API, these methods call it and the pool goes.
 */
final class LimiterCalls implements AutoCloseable {
  private final ExecutorService pool;

  LimiterCalls() {
    AtomicInteger n = new AtomicInteger();
    int threads = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
    this.pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "tally-limiter-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  private <T> CompletionStage<T> call(Supplier<T> op) {
    return CompletableFuture.supplyAsync(op, pool);
  }

  CompletionStage<Decision> decide(RateLimiter limiter, long permits) {
    return call(() -> limiter.decide(permits));
  }

  CompletionStage<Void> refund(RateLimiter limiter, long permits) {
    return call(() -> {
      limiter.refund(permits);
      return null;
    });
  }

  CompletionStage<Void> reset(RateLimiter limiter) {
    return call(() -> {
      limiter.reset();
      return null;
    });
  }

  CompletionStage<RateLimiter> reconfigure(RateLimiter limiter, Limit... limits) {
    return call(() -> limiter.reconfigure(limits));
  }

  CompletionStage<Void> topUp(Quota quota, long units) {
    return call(() -> {
      quota.topUp(units);
      return null;
    });
  }

  @Override
  public void close() {
    pool.shutdown();
  }
}
