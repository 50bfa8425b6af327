package dev.tally.redis;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * How a blocking call waits for its reply: one caller at a time (or a few, on many cores) spins
 * for a moment, yielding, before it parks, while replies keep arriving within that moment. While
 * it spins it also wakes the callers of the limiter batches that complete meanwhile, for the I/O
 * thread ({@link Handoff}).
 *
 * <p>Why spin at all: a Redis on the same host or in the same rack answers in tens of
 * microseconds. A caller parked on its future must be woken by Lettuce's I/O thread when the
 * reply lands: a futex call there, then a context switch, and on a virtual machine whose CPU
 * went idle meanwhile, the wake-up of that virtual CPU, before the caller runs again. Measured
 * on a two-core VM against a local Redis, that wake-up cost as much as the round trip itself:
 * one thread made about 14,000 {@code INCRBY}/s parking and 22,000-46,000/s spinning, where
 * {@code redis-benchmark -c 1} (a C loop that never hands off between threads) made about 21,000.
 * A caller still spinning when the reply lands sees it at once, and the I/O thread has no one to
 * wake.
 *
 * <p>Why spin with {@link Thread#yield}: the spinner gives its core to any thread that can run
 * (the I/O thread reading replies, callers being woken, the application's own work) and takes it
 * back only when nothing else wants it, so it never delays them, yet its core does not go idle.
 * Wake-ups onto a busy core are cheap; onto an idle virtual CPU they are not. With many callers,
 * one yielding spinner made the whole machine faster for the same CPU per operation (two-core
 * VM, runs interleaved): 32 threads on one limiter 123,000-147,000 decisions/s without it,
 * 141,000-162,000/s with it (11-15 µs of CPU per decision either way, Redis included); 8 threads
 * incrementing one counter 73,000-82,000/s against 83,000-94,000/s.
 *
 * <p>Spinning burns a CPU, so it is bounded three ways:
 * <ul>
 *   <li><b>At most {@code max(1, processors / 4)} callers spin at a time</b>; the others park
 *       at once. More spinners only take turns on the same cores, and they take those cores
 *       from the threads that produce the replies. Letting every caller yield instead of
 *       parking was tried on the two-core VM. It was faster for 32 threads on one hot key,
 *       where batches are large and Redis and the I/O thread need little CPU per caller.
 *       It was slower, at 2-4 times the CPU per call, for 4 or 8 threads. Beside a CPU-bound
 *       process it was 5 times slower (docs/benchmarks.md).
 *   <li><b>Never longer than {@value #SPIN_NANOS} ns</b> per call.
 *   <li><b>Only while it pays.</b> Every call that spins, or that parks because spinning is off,
 *       tells whether a spin catches its reply: one that spun, by whether the reply came before
 *       the spin ended; one that parked, by whether its reply came within the spin's length,
 *       which a spin would have caught too. A moving average of the misses over about the last
 *       {@value #MEMORY} such calls decides: at half or more, callers park, except one call in
 *       {@value #PROBE_EVERY}, which spins to see. So a Redis whose round trips are all slower
 *       than the spin (remote, or loaded) costs about 11 wasted spins, then one in
 *       {@value #PROBE_EVERY} calls: under 2 µs of CPU per call against round trips of
 *       hundreds; while a burst of slow replies, which a virtual machine gives now and then (a
 *       few in a hundred, each of some hundreds of microseconds), does not stop a spin that
 *       catches nearly every other reply. (An earlier rule, four misses in a row, did: on a
 *       two-core VM a lone caller spent a quarter to a third of its calls parked after such
 *       bursts, and made 12,000-19,000 limiter decisions/s where this rule makes
 *       19,000-21,000, runs interleaved.)
 * </ul>
 *
 * <p>It never changes what a call returns or how long it may take: the wait after the spin is
 * the rest of the caller's usual bounded {@code get}. {@code ?spinWait=false} turns it off.
 */
final class ReplyWait {
  static final long SPIN_NANOS = 100_000;
  /** How many recent calls the miss average mostly reflects: each call moves it by 1/MEMORY. */
  static final int MEMORY = 16;
  static final int PROBE_EVERY = 64;

  private final int maxSpinners;
  private final long spinNanos;
  private final Handoff handoff;
  /** Spins begun, and those that caught their reply: how tests see what happened. */
  private final LongAdder spins = new LongAdder();
  private final LongAdder catches = new LongAdder();
  /** Blocking callers spinning right now. */
  private final AtomicInteger spinners = new AtomicInteger();
  /** The moving average of misses, 0 to 1. Racy on purpose: a heuristic, not a count. */
  private volatile double misses;
  private int calls; // racy too: only picks which calls probe

  ReplyWait(boolean enabled, Handoff handoff) {
    this(enabled ? Math.max(1, Runtime.getRuntime().availableProcessors() / 4) : 0, SPIN_NANOS, handoff);
  }

  ReplyWait(int maxSpinners, long spinNanos) {
    this(maxSpinners, spinNanos, new Handoff());
  }

  /** @param handoff completions a spinning caller runs for the I/O thread ({@link Handoff}) */
  ReplyWait(int maxSpinners, long spinNanos, Handoff handoff) {
    this.maxSpinners = maxSpinners;
    this.spinNanos = spinNanos;
    this.handoff = handoff;
  }

  /** {@code future.get(timeout)}, after a brief spin when the rules above allow one. */
  <T> T get(CompletableFuture<T> future, long timeoutNanos)
      throws InterruptedException, ExecutionException, TimeoutException {
    if (maxSpinners == 0 || future.isDone()) {
      return future.get(timeoutNanos, TimeUnit.NANOSECONDS);
    }
    long start = System.nanoTime();
    if (!spinning() && ++calls % PROBE_EVERY != 0) {
      T value = future.get(timeoutNanos, TimeUnit.NANOSECONDS);
      learn(System.nanoTime() - start <= spinNanos); // would a spin have caught it?
      return value;
    }
    if (!takeSpinnerPlace()) {
      return future.get(timeoutNanos, TimeUnit.NANOSECONDS); // others spin already
    }
    boolean caught;
    spins.increment();
    try {
      caught = spin(future, start + spinNanos);
    } finally {
      spinners.decrementAndGet();
    }
    if (caught) {
      catches.increment();
    }
    learn(caught);
    return future.get(timeoutNanos - (System.nanoTime() - start), TimeUnit.NANOSECONDS);
  }

  private boolean takeSpinnerPlace() {
    for (int n = spinners.get(); n < maxSpinners; n = spinners.get()) {
      if (spinners.compareAndSet(n, n + 1)) {
        return true;
      }
    }
    return false;
  }

  long spins() {
    return spins.sum();
  }

  long catches() {
    return catches.sum();
  }

  /** Whether callers spin now, rather than only one in {@value #PROBE_EVERY}. */
  boolean spinning() {
    return misses < 0.5;
  }

  private void learn(boolean caught) {
    double m = misses;
    misses = m + ((caught ? 0 : 1) - m) / MEMORY;
  }

  /**
   * Waits for {@code future} until the deadline, meanwhile running the completions the I/O
   * thread hands over ({@link Handoff}), if no other spinner serves them.
   */
  private boolean spin(CompletableFuture<?> future, long deadline) {
    boolean serving = handoff.open();
    try {
      while (!future.isDone()) {
        if (System.nanoTime() - deadline > 0) {
          return false;
        }
        if (!serving || !handoff.serve()) {
          Thread.yield(); // the core goes to any thread that can run: the I/O thread, a caller woken
        }
      }
      return true;
    } finally {
      if (serving) {
        handoff.close();
      }
    }
  }
}
