package dev.tally;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of a store's circuit breaker: after {@link #failureThreshold()} consecutive calls
 * that failed with {@link StoreUnavailableException} or {@link StoreTimeoutException}, the store
 * is not called for {@link #openFor()}; every operation fails at once with a
 * {@link StoreUnavailableException} saying the circuit is open, so its {@link FailurePolicy}
 * answers at once instead of after the store's timeout. Then the next call starts a probe, a
 * read of one key made in the background (no caller waits for it): if the store answers, calls
 * flow again; if not, the circuit stays open for another {@code openFor}.
 *
 * <pre>{@code
 * Tally tally = Tally.builder("redis://cache:6379")
 *     .circuitBreaker(CircuitBreaker.of(5, Duration.ofSeconds(1)))
 *     .failurePolicy(FailurePolicy.FAIL_OPEN)
 *     .build();
 * }</pre>
 *
 * <p>There is one breaker per opened {@link Tally}, shared by all its counters, groups and
 * limiters, synchronous and asynchronous: an outage belongs to the store, not to a key. Only
 * store failures count: invalid input, overflow, a missing key or a wrong kind are the store's
 * answers and show that it is up. A store that shards keys over servers (Redis Cluster) shares
 * the one breaker too, so one failing shard can open it for all: set the threshold with that in
 * mind.
 *
 * <p>{@link #DISABLED} is the library's default in this version, which leaves every call to
 * wait for the store as before; tally-server and the Spring Boot starter turn
 * {@link #DEFAULT} on. The state is {@link Tally#circuitState()}; {@link TallyListener} hears
 * every opening, closing and call refused, and {@link TallyMetrics} counts them. docs/failures.md
 * tells the whole story.
 */
public final class CircuitBreaker {
  /** No breaker: every call goes to the store, however long it has been failing. */
  public static final CircuitBreaker DISABLED = new CircuitBreaker(0, Duration.ZERO);

  /** Opens after 5 consecutive failures, for 1 second before each probe. */
  public static final CircuitBreaker DEFAULT = of(5, Duration.ofSeconds(1));

  private final int failureThreshold;
  private final Duration openFor;

  private CircuitBreaker(int failureThreshold, Duration openFor) {
    this.failureThreshold = failureThreshold;
    this.openFor = openFor;
  }

  /**
   * A breaker that opens after {@code failureThreshold} consecutive store failures and stays
   * open for {@code openFor} before it lets one probe through.
   *
   * @throws IllegalArgumentException if the threshold is below 1 or {@code openFor} is not
   *     positive
   */
  public static CircuitBreaker of(int failureThreshold, Duration openFor) {
    Objects.requireNonNull(openFor, "openFor");
    if (failureThreshold < 1) {
      throw new IllegalArgumentException("circuit breaker failure threshold must be 1 or more, not "
          + failureThreshold + "; use CircuitBreaker.DISABLED for no breaker");
    }
    if (openFor.isNegative() || openFor.isZero()) {
      throw new IllegalArgumentException("circuit breaker open time must be positive, not " + openFor
          + "; use CircuitBreaker.DISABLED for no breaker");
    }
    // Nanoseconds are what the breaker counts in; 292 years is the most a long holds.
    if (openFor.compareTo(Duration.ofNanos(Long.MAX_VALUE)) > 0) {
      throw new IllegalArgumentException("circuit breaker open time " + Durations.format(openFor) + " is too long");
    }
    return new CircuitBreaker(failureThreshold, openFor);
  }

  /** Whether this breaker ever opens: false for {@link #DISABLED} only. */
  public boolean enabled() {
    return failureThreshold > 0;
  }

  /** How many consecutive store failures open the circuit; 0 when {@link #DISABLED}. */
  public int failureThreshold() {
    return failureThreshold;
  }

  /** How long the circuit stays open before a probe; zero when {@link #DISABLED}. */
  public Duration openFor() {
    return openFor;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof CircuitBreaker c && c.failureThreshold == failureThreshold
        && c.openFor.equals(openFor);
  }

  @Override
  public int hashCode() {
    return 31 * failureThreshold + openFor.hashCode();
  }

  @Override
  public String toString() {
    return enabled()
        ? "CircuitBreaker[after " + failureThreshold + " failures, open for " + Durations.format(openFor) + "]"
        : "CircuitBreaker[disabled]";
  }

  /** Where a store's circuit stands, for health checks. */
  public enum State {
    /** Calls go to the store (also the state of a Tally without a breaker). */
    CLOSED,
    /**
     * The store failed {@link CircuitBreaker#failureThreshold()} times in a row: calls fail at
     * once.
     */
    OPEN,
    /**
     * The open time is over: the next call starts a background probe of the store (or one is in
     * flight), and calls still fail at once until it answers.
     */
    HALF_OPEN
  }
}
