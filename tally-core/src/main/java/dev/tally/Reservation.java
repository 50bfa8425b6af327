package dev.tally;

/**
 * Permits taken ahead of work whose real cost is known only when it ends: a call to a language
 * model limited in tokens per minute reserves an estimate, and settles at the tokens it really
 * used. Obtained from {@link RateLimiter#reserve(long, java.time.Duration)}.
 *
 * <pre>{@code
 * RateLimiter tokens = tally.limiter("llm:user:42", Limit.tokenBucket(90_000, Duration.ofMinutes(1)));
 * Reservation r = tokens.reserve(promptTokens + maxOutputTokens, Duration.ofMinutes(5));
 * if (!r.granted()) {
 *   return tooManyRequests(r.decision().retryAfter());
 * }
 * try {
 *   Response resp = model.complete(prompt);
 *   r.settle(resp.totalTokens());   // refunds the surplus, or charges the excess
 * } catch (RuntimeException e) {
 *   r.cancel();                     // nothing was spent
 *   throw e;
 * }
 * }</pre>
 *
 * <p>A reservation that is neither settled nor cancelled within its ttl is settled at its
 * estimate, by itself. This handle refuses a second settlement or cancellation at once; another
 * handle on the same id is refused by the store ({@link ReservationHandle}).
 */
public interface Reservation extends ReservationHandle {
  /**
   * The limiter's decision on the estimate: allowed (the estimate was taken and is held until
   * settled) or refused (nothing was taken, and the reservation holds nothing).
   */
  Decision decision();

  /** {@code decision().allowed()}. */
  default boolean granted() {
    return decision().allowed();
  }

  /** The permits reserved. */
  long estimate();

  /**
   * {@inheritDoc}
   *
   * @throws IllegalStateException if the reservation was refused (it holds nothing to settle)
   */
  @Override
  Decision settle(long actual);
}
