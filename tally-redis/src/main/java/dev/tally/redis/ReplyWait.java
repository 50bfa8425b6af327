package dev.tally.redis;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How a blocking call waits for its reply: a lone caller spins for a moment before it parks,
 * while replies keep arriving within that moment.
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
 * <p>Spinning burns a CPU, so it is bounded three ways:
 * <ul>
 *   <li><b>Only a lone caller spins.</b> While other blocking calls on the same store are
 *       waiting (more than {@code max(1, processors / 4)}), a caller parks at once: with many
 *       callers the store is busy anyway and throughput, not one caller's latency, is what
 *       counts, and spinning threads would take the cores that the I/O thread and the callers
 *       being woken need.
 *   <li><b>Never longer than {@value #SPIN_NANOS} ns</b> per call.
 *   <li><b>Only while it pays.</b> After {@value #MAX_MISSES} spins in a row that ended without
 *       a reply (a remote Redis, a loaded server), callers park at once, until one call in
 *       {@value #PROBE_EVERY} gives spinning a fresh chance of {@value #MAX_MISSES} calls. A
 *       chance of one call would not do: on a virtual machine whose CPUs went idle while callers
 *       parked, the first replies are slow however fast the server is, and spinning only pays
 *       again once the path is warm. So a store whose round trips are all slower than the spin
 *       wastes {@value #MAX_MISSES} spins in {@value #PROBE_EVERY} calls: about 6 µs of CPU per
 *       call, against round trips of hundreds.
 * </ul>
 *
 * <p>It never changes what a call returns or how long it may take: the wait after the spin is
 * the caller's usual bounded {@code get}. {@code ?spinWait=false} turns it off.
 */
final class ReplyWait {
  static final long SPIN_NANOS = 100_000;
  static final int MAX_MISSES = 4;
  static final int PROBE_EVERY = 64;

  private final int maxSpinners;
  private final long spinNanos;
  /** Blocking callers waiting right now, spinning or parked. */
  private final AtomicInteger waiting = new AtomicInteger();
  /** Spins in a row that ended without a reply. Racy on purpose: a heuristic, not a count. */
  private volatile int misses;
  private int calls; // racy too: only picks which calls probe

  ReplyWait(boolean enabled) {
    this(enabled ? Math.max(1, Runtime.getRuntime().availableProcessors() / 4) : 0, SPIN_NANOS);
  }

  ReplyWait(int maxSpinners, long spinNanos) {
    this.maxSpinners = maxSpinners;
    this.spinNanos = spinNanos;
  }

  /** {@code future.get(timeout)}, after a brief spin when the rules above allow one. */
  <T> T get(CompletableFuture<T> future, long timeoutNanos)
      throws InterruptedException, ExecutionException, TimeoutException {
    if (maxSpinners == 0 || future.isDone()) {
      return future.get(timeoutNanos, TimeUnit.NANOSECONDS);
    }
    int others = waiting.getAndIncrement();
    try {
      if (others < maxSpinners && worthSpinning()) {
        spin(future);
      }
      return future.get(timeoutNanos, TimeUnit.NANOSECONDS);
    } finally {
      waiting.decrementAndGet();
    }
  }

  /** Whether callers spin now rather than only probing. */
  boolean spinning() {
    return misses < MAX_MISSES;
  }

  private boolean worthSpinning() {
    if (misses < MAX_MISSES) {
      return true;
    }
    if (++calls % PROBE_EVERY == 0) {
      misses = 0; // a fresh chance: spinning may need a few calls in a row to warm the path up
      return true;
    }
    return false;
  }

  private void spin(CompletableFuture<?> future) {
    long deadline = System.nanoTime() + spinNanos;
    while (!future.isDone()) {
      if (System.nanoTime() - deadline > 0) {
        misses = Math.min(misses + 1, MAX_MISSES);
        return;
      }
      Thread.onSpinWait();
    }
    misses = 0;
  }
}
