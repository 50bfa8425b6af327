package dev.tally.spi;

/**
 * A store's fast path for one limiter's {@code tryAcquire}, handed out by
 * {@link Store#shortcut} and kept by the limiter handle: it may hold what it found on its last
 * call (the {@code mem:} store keeps the bucket's cell, so a grant is one compare-and-set with no
 * lookup and no allocation). Its answer is exactly {@code store.limit(call, ACQUIRE,
 * permits).allowed()}; it throws what {@link Store#limit} throws.
 */
@FunctionalInterface
public interface LimiterShortcut {

  /** Acquires {@code permits} (at least 1) if every limit allows; returns whether it did. */
  boolean tryAcquire(long permits);
}
