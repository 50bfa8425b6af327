package dev.tally.spring;

/**
 * A call was denied by a rate limit ({@link RateLimited}, {@link TallyRateLimits#enforce}). In a
 * web application it is answered {@code 429 Too Many Requests} with the {@code RateLimit},
 * {@code RateLimit-Policy} and {@code Retry-After} header fields and an RFC 9457 body (see
 * {@link RateLimitVerdict}); elsewhere the caller catches it.
 */
public class RateLimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient RateLimitVerdict verdict;

  /**
   * @throws IllegalArgumentException if {@code verdict} allowed the call: there is nothing to answer 429 for
   */
  public RateLimitExceededException(RateLimitVerdict verdict) {
    super(refused(verdict).detail());
    this.verdict = verdict;
  }

  /** What every policy said. */
  public RateLimitVerdict verdict() {
    return verdict;
  }

  private static RateLimitVerdict refused(RateLimitVerdict verdict) {
    if (verdict.allowed()) {
      throw new IllegalArgumentException("the verdict allowed the call (" + verdict + "); throw only a refused one");
    }
    return verdict;
  }
}
