package dev.tally;

import java.time.Instant;

/**
 * Where Tally reads the time: wall-clock nanoseconds since the Unix epoch.
 *
 * <p>Expiry and every rate limiter read the time through this one interface, never through
 * {@code System.currentTimeMillis()}, so tests can drive time by hand and stores that keep
 * their own clock (Redis {@code TIME}, SQL {@code now()}) can be told to use a test clock
 * instead. Wall time rather than {@link System#nanoTime()} because counters and limiters are
 * shared between processes and hosts, which share no monotonic origin.
 *
 * <p>Implementations must be thread-safe and cheap; they are read on hot paths.
 */
@FunctionalInterface
public interface TimeSource {

  /** Returns the current time in nanoseconds since 1970-01-01T00:00:00Z. */
  long nanos();

  /** The system clock, at the best resolution the platform gives {@link Instant#now()}. */
  static TimeSource system() {
    return SystemTimeSource.INSTANCE;
  }
}

/** {@link Instant#now()} as nanoseconds; a separate type so {@code system()} is a singleton. */
enum SystemTimeSource implements TimeSource {
  INSTANCE;

  @Override
  public long nanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }
}
