package dev.tally.tck;

import dev.tally.TimeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/** A clock that moves only when a test says so; thread-safe. */
public final class ManualTimeSource implements TimeSource {
  private final AtomicLong nanos;
  private volatile LongConsumer follower = n -> { };

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

  /**
   * Tells {@code follower} the time now and after every change, in order, before the change
   * returns: for a store whose server keeps its own clock, which a test harness can make follow
   * this one (tally-redis runs a server whose wall clock is set this way). One follower at a time.
   */
  public synchronized void follow(LongConsumer follower) {
    this.follower = follower;
    follower.accept(nanos.get());
  }

  /** Moves the clock forward (or back, for a negative duration). */
  public void advance(Duration d) {
    advanceNanos(d.toNanos());
  }

  /** Moves the clock forward by {@code n} nanoseconds. */
  public synchronized void advanceNanos(long n) {
    follower.accept(nanos.addAndGet(n));
  }

  /** Sets the clock. */
  public synchronized void set(Instant instant) {
    long n = instant.getEpochSecond() * 1_000_000_000L + instant.getNano();
    nanos.set(n);
    follower.accept(n);
  }
}
