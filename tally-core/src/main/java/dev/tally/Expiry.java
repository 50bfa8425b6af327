package dev.tally;

import java.time.Duration;
import java.util.Optional;

/**
 * What {@link Counters#expiry} tells about a key: that it does not exist (or has expired), that
 * it never expires, or how long it has left. {@link Counters#ttl} folds the first two into an
 * empty answer; this keeps them apart, as Redis' {@code PTTL} does with -2 and -1.
 */
public final class Expiry {
  /** The key does not exist, or has expired. */
  public static final Expiry MISSING = new Expiry(false, null);

  /** The key exists and never expires. */
  public static final Expiry PERMANENT = new Expiry(true, null);

  private final boolean exists;
  private final Duration remaining; // null: none

  private Expiry(boolean exists, Duration remaining) {
    this.exists = exists;
    this.remaining = remaining;
  }

  /** A live key with {@code remaining} left. */
  public static Expiry after(Duration remaining) {
    if (remaining.isNegative()) {
      throw new IllegalArgumentException("remaining must not be negative, not " + remaining);
    }
    return new Expiry(true, remaining);
  }

  /** Whether the key exists (has not expired). */
  public boolean exists() {
    return exists;
  }

  /** Whether the key exists and will expire. */
  public boolean expires() {
    return remaining != null;
  }

  /** The time left, if the key exists and will expire. */
  public Optional<Duration> remaining() {
    return Optional.ofNullable(remaining);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Expiry e && e.exists == exists && java.util.Objects.equals(e.remaining, remaining);
  }

  @Override
  public int hashCode() {
    return Boolean.hashCode(exists) * 31 + java.util.Objects.hashCode(remaining);
  }

  @Override
  public String toString() {
    return !exists ? "missing" : remaining == null ? "permanent" : "expires in " + remaining;
  }
}
