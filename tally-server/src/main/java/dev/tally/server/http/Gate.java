package dev.tally.server.http;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts requests in flight, from their admission to the moment their answer is handed to the
 * connection (including acquires that are waiting), so that shutdown can close the gate and
 * wait for them; and knows every open connection's (or HTTP/2 stream's) handler, so that
 * shutdown can answer what is left and close them before the event loops stop.
 */
final class Gate {
  private final AtomicInteger inFlight = new AtomicInteger();
  private final Set<HttpHandler> handlers = ConcurrentHashMap.newKeySet();
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

  /** Whether shutdown has begun: answers then close their connections. */
  boolean closed() {
    return closed;
  }

  void register(HttpHandler handler) {
    handlers.add(handler);
  }

  void unregister(HttpHandler handler) {
    handlers.remove(handler);
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

  /**
   * Has every handler answer what it still owes (503) and close its connection once what was
   * written has gone out; waits up to {@code bound} for them. True if all closed in time.
   */
  boolean finishAll(Duration bound) throws InterruptedException {
    List<CompletableFuture<Void>> closedAll = new ArrayList<>();
    for (HttpHandler h : handlers) {
      CompletableFuture<Void> done = new CompletableFuture<>();
      closedAll.add(done);
      h.runOnLoop(() -> h.finish(done), done);
    }
    try {
      CompletableFuture.allOf(closedAll.toArray(CompletableFuture[]::new))
          .get(bound.toNanos(), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException | ExecutionException e) {
      return false;
    }
  }
}
