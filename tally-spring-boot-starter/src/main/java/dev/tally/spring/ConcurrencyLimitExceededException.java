package dev.tally.spring;

/**
 * A call of a {@link ConcurrencyLimited} method that got no permit: every permit was held for its
 * whole wait, or the store failed and the limit fails closed. A web application answers it
 * {@code 429} (or {@code 503} for the store's failure) with an RFC 9457 body.
 */
public class ConcurrencyLimitExceededException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String name;
  private final long maxPermits;
  private final boolean storeFailed;

  public ConcurrencyLimitExceededException(String name, long maxPermits, boolean storeFailed, String message) {
    super(message);
    this.name = name;
    this.maxPermits = maxPermits;
    this.storeFailed = storeFailed;
  }

  /** The limit's store name. */
  public String name() {
    return name;
  }

  public long maxPermits() {
    return maxPermits;
  }

  /** Whether the store failed and the limit refused in its place (fail-closed). */
  public boolean storeFailed() {
    return storeFailed;
  }
}
