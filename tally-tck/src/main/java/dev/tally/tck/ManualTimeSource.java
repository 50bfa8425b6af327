package dev.tally.tck;

import dev.tally.TimeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when a test says so; thread-safe. */
public final class ManualTimeSource implements TimeSource {
  private final AtomicLong nanos;

  /** Starts at a fixed, realistic instant (2026-11-08T00:00:00Z). */
  public ManualTimeSource() {
    this(Instant.parse("2026-11-08T00:00:00Z"));
  }

  /** Starts at {@code start}. */
  public ManualTimeSource(Instant start) {
    this.nanos = new AtomicLong(start.getEpochSecond() * 1_000_000_000L + start.getNano());
  }

  @Override
  public long nanos() {
    return nanos.get();
  }

  /** Moves the clock forward (or back, for a negative duration). */
  public void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }

  /** Moves the clock forward by {@code n} nanoseconds. */
  public void advanceNanos(long n) {
    nanos.addAndGet(n);
  }

  /** Sets the clock. */
  public void set(Instant instant) {
    nanos.set(instant.getEpochSecond() * 1_000_000_000L + instant.getNano());
  }
}
