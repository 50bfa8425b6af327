package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.TimeSource;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.OperationRecord;
import dev.tally.spi.Store;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The operation ids of the {@code mem:} store, with their results.
 *
 * <p>A call with a new id puts a pending entry for it ({@link ConcurrentHashMap#putIfAbsent}: one
 * compare-and-swap into an empty bin, no lock), then applies the mutation and publishes its result
 * in the entry. Of concurrent calls with one id exactly one puts the entry, so exactly one
 * applies; the others find the entry and wait until it holds the result, then return it. A
 * mutation that throws takes its entry out again and marks it failed, so nothing is recorded: a
 * waiter then starts afresh, and so does a retry. The mutation runs on the counters' and
 * limiters' own maps, never inside this one, so no lock is taken twice.
 *
 * <p>Every id is kept for the same retention, so ids expire in the order they were recorded: a
 * queue in that order lets each call drop the expired ones at its head, and memory holds the ids
 * of one retention window (about 150 bytes each, plus the result). An expired entry still in the
 * map is replaced ({@link ConcurrentHashMap#replace(Object, Object, Object)}) by the next call
 * with its id, which then applies afresh.
 */
final class OperationLog {
  /** The result of an entry whose mutation is still running. */
  private static final Object PENDING = new Object();
  /** The result of an entry whose mutation threw: it was never recorded. */
  private static final Object FAILED = new Object();
  /** Spins before a waiter yields its processor to the thread it waits for. */
  private static final int SPINS = 64;

  private final ConcurrentHashMap<OperationId, Entry> entries = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Entry> byAge = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean dropping = new AtomicBoolean();
  private final TimeSource time;
  private final long retentionNanos;

  /** An id's entry: the fingerprint of its operation, and that operation's result once known. */
  private static final class Entry {
    final OperationId id;
    final long fingerprint;
    final long expiresAt;
    volatile Object result = PENDING;

    Entry(OperationId id, long fingerprint, long expiresAt) {
      this.id = id;
      this.fingerprint = fingerprint;
      this.expiresAt = expiresAt;
    }
  }

  OperationLog(TimeSource time, long retentionNanos) {
    this.time = time;
    this.retentionNanos = retentionNanos;
  }

  Object applyOnce(Store store, OperationId id, Mutation mutation) {
    long now = time.nanos();
    dropExpired(now);
    for (;;) {
      Entry e = entries.get(id);
      if (e != null && e.expiresAt - now > 0) {
        Object r = await(e);
        if (r != FAILED) {
          return copy(asRecorded(new OperationRecord(e.fingerprint, r)).replay(id, mutation)); // another operation throws
        }
        continue; // the first call failed and recorded nothing: start afresh
      }
      Entry mine = new Entry(id, mutation.fingerprint(), now + retentionNanos);
      if (e == null ? entries.putIfAbsent(id, mine) != null : !entries.replace(id, e, mine)) {
        continue; // another call with this id came first: wait for it
      }
      Object r = FAILED;
      try {
        r = mutation.applyTo(store);
      } finally {
        if (r == FAILED) { // it threw: record nothing, and let a waiter start afresh
          entries.remove(id, mine);
        }
        mine.result = r;
      }
      byAge.add(mine);
      return copy(r);
    }
  }

  /** The result of {@code e}, once its first call has finished (it takes a store call at most). */
  private static Object await(Entry e) {
    Object r;
    for (int spins = 0; (r = e.result) == PENDING; spins++) {
      if (spins < SPINS) {
        Thread.onSpinWait();
      } else {
        Thread.yield();
      }
    }
    return r;
  }

  /**
   * What a repeat answers: the result as its record keeps it, as every store that writes the
   * record returns it. A decision loses its mismatch, which the repeat did not decide.
   */
  private static OperationRecord asRecorded(OperationRecord r) {
    return r.result() instanceof Decision ? OperationRecord.decode(r.encode()) : r;
  }

  /** A transaction's results are an array: each caller gets its own. */
  private static Object copy(Object result) {
    return result instanceof Number[] rs ? rs.clone() : result;
  }

  /** Drops expired ids from the head; one thread at a time, so its peek and poll agree. */
  private void dropExpired(long now) {
    if (!dropping.compareAndSet(false, true)) {
      return; // another caller is dropping them
    }
    try {
      for (Entry head; (head = byAge.peek()) != null && head.expiresAt - now <= 0; ) {
        byAge.poll();
        entries.remove(head.id, head);
      }
    } finally {
      dropping.set(false);
    }
  }

  /** How many ids are remembered, expired ones not yet dropped included. */
  int size() {
    return entries.size();
  }
}
