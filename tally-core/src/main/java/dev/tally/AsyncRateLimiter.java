package dev.tally;

import java.util.concurrent.CompletionStage;

/**
 * The asynchronous form of a {@link RateLimiter}, for event loops: each call returns at once and
 * completes when the store has decided, so no thread waits per request. Same semantics, failure
 * policy and operation ids as its {@link #sync()} twin.
 *
 * <pre>{@code
 * limiter.async().decide(1).thenAccept(d -> respond(d.allowed() ? 200 : 429, d));
 * }</pre>
 */
public interface AsyncRateLimiter {

  /** The blocking twin. */
  RateLimiter sync();

  /** The limiter's name. */
  String name();

  /** The asynchronous form of {@link RateLimiter#withOperationId}. */
  AsyncRateLimiter withOperationId(String id);

  /** @see RateLimiter#tryAcquire(long) */
  CompletionStage<Boolean> tryAcquire(long permits);

  /** @see RateLimiter#decide(long) */
  CompletionStage<Decision> decide(long permits);

  /** @see RateLimiter#refund(long) */
  CompletionStage<Void> refund(long permits);

  /** @see RateLimiter#charge(long) */
  CompletionStage<Decision> charge(long permits);

  /** @see RateLimiter#available() */
  CompletionStage<Long> available();

  /** @see RateLimiter#reset() */
  CompletionStage<Void> reset();
}
