package dev.tally.server.http;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts requests in flight, from the handler's first line to the response's last byte
 * (including acquires that are waiting), so that shutdown can close the gate and wait for them.
 */
final class Gate {
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile boolean closed;

  /** Admits a request; false once closing (the caller answers 503 and does not {@link #exit}). */
  boolean enter() {
    inFlight.incrementAndGet();
    if (closed) {
      exit();
      return false;
    }
    return true;
  }

  void exit() {
    if (inFlight.decrementAndGet() == 0 && closed) {
      synchronized (this) {
        notifyAll();
      }
    }
  }

  int inFlight() {
    return inFlight.get();
  }

  /** Refuses new requests, then waits up to {@code grace} for those in flight; true if all ended. */
  boolean closeAndDrain(Duration grace) throws InterruptedException {
    closed = true;
    long deadline = System.nanoTime() + grace.toNanos();
    synchronized (this) {
      while (inFlight.get() > 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        wait(Math.max(1, left / 1_000_000));
      }
    }
    return true;
  }
}
