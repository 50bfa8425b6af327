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

  /**
   * The system's wall clock, at nanosecond resolution: {@link Instant#now()}, read for less (see
   * the note on the implementation in the source).
   */
  static TimeSource system() {
    return SystemTimeSource.INSTANCE;
  }
}

/**
 * The wall clock as {@link System#nanoTime()} plus an offset to the epoch that is measured again
 * with {@link Instant#now()} every millisecond; a separate type so {@code system()} is a
 * singleton.
 *
 * <p>Why not {@code Instant.now()} on every read: on Java 17 it is a native call into the VM
 * ({@code VM.getNanoTimeAdjustment}, not an intrinsic), markedly dearer than {@code nanoTime()},
 * which the JIT turns into a plain call to the OS clock (docs/benchmarks.md has the figures). A
 * limiter's fast path is one clock read and one CAS, so the clock was most of its cost.
 *
 * <p>What it costs in accuracy. On Linux {@code nanoTime()} is {@code CLOCK_MONOTONIC}, and
 * {@code CLOCK_REALTIME} differs from it by an offset that changes only when the wall clock is
 * stepped (NTP slewing adjusts both alike). Between steps this returns what {@code Instant.now()}
 * would, to within the error of measuring the offset: about half the gap between the two
 * monotonic reads around the wall-clock read, which is under {@link #MAX_SKEW_NANOS} unless the
 * thread was preempted in all eight tries (measured on a loaded machine: a few nanoseconds on
 * average, a few hundred at worst). A step, a leap second or a resume from suspend is picked
 * up within {@link #RESYNC_NANOS}; on platforms whose monotonic clock is not slewed with the
 * wall clock, the drift between re-measurements is bounded by the same period (half a
 * microsecond at NTP's 500 ppm). A re-measurement may move the time back by that error, as a
 * step moves {@code Instant.now()} back: nothing relied on the wall clock being monotonic
 * before either. Processes on one host thus agree to well under a microsecond, and hosts as
 * closely as their clocks are synchronised, which is what sharing counters and limiters between
 * them needs. Re-measuring costs one {@code Instant.now()} a millisecond and one small object,
 * so reads stay allocation-free in effect.
 */
final class SystemTimeSource implements TimeSource {
  /** The one instance: its offset is measured once for the whole JVM. */
  static final SystemTimeSource INSTANCE = new SystemTimeSource();

  /** How long an offset is trusted before it is measured again. */
  static final long RESYNC_NANOS = 1_000_000;
  /** The widest gap between the two reads of a measurement that is accepted at once. */
  static final long MAX_SKEW_NANOS = 1_000;

  /** Epoch nanoseconds at {@code nanoTime() == at}. Immutable, so safe to publish racily. */
  private record Anchor(long at, long epochNanos) {}

  private volatile Anchor anchor = measure();

  private SystemTimeSource() {}

  @Override
  public long nanos() {
    Anchor a = anchor;
    long t = System.nanoTime();
    long since = t - a.at;
    if (since >= 0 && since < RESYNC_NANOS) {
      return a.epochNanos + since;
    }
    a = measure();
    anchor = a;
    return a.epochNanos + (t - a.at);
  }

  /**
   * Reads both clocks: the wall clock between two monotonic reads, and the midpoint of those as
   * its monotonic time. Retries a few times if the reads were far apart (preemption, a slow
   * first call).
   */
  private static Anchor measure() {
    Anchor best = null;
    long bestSkew = Long.MAX_VALUE;
    for (int i = 0; i < 8; i++) {
      long before = System.nanoTime();
      Instant now = Instant.now();
      long after = System.nanoTime();
      long skew = after - before;
      if (skew < bestSkew) {
        bestSkew = skew;
        best = new Anchor(before + skew / 2, now.getEpochSecond() * 1_000_000_000L + now.getNano());
        if (skew <= MAX_SKEW_NANOS) {
          break;
        }
      }
    }
    return best;
  }
}
