package dev.tally;

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
 * <p>A call with an id runs inside {@link ConcurrentHashMap#compute} on the id's entry, so the
 * check, the mutation and the record are one step for that id: of concurrent calls with one id
 * exactly one applies, and the others wait on the entry's bin and return its result. The
 * mutation itself runs on the counters' and limiters' own maps, never on this one, so no lock
 * is taken twice.
 *
 * <p>Every id is kept for the same retention, so ids expire in the order they were recorded: a
 * queue in that order lets each call drop the expired ones at its head, and memory holds the ids
 * of one retention window (about 150 bytes each, plus the result).
 */
final class OperationLog {
  private final ConcurrentHashMap<OperationId, Entry> entries = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Entry> byAge = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean dropping = new AtomicBoolean();
  private final TimeSource time;
  private final long retentionNanos;

  private record Entry(OperationId id, OperationRecord record, long expiresAt) {}

  OperationLog(TimeSource time, long retentionNanos) {
    this.time = time;
    this.retentionNanos = retentionNanos;
  }

  Object applyOnce(Store store, OperationId id, Mutation mutation) {
    long now = time.nanos();
    dropExpired(now);
    Object[] result = new Object[1];
    Entry[] added = new Entry[1];
    entries.compute(id, (k, e) -> {
      if (e != null && e.expiresAt - now > 0) {
        result[0] = e.record.replay(id, mutation); // another operation throws: the entry stays
        return e;
      }
      Object r = mutation.applyTo(store); // throws: nothing recorded
      result[0] = r;
      added[0] = new Entry(id, OperationRecord.of(mutation, r), now + retentionNanos);
      return added[0];
    });
    if (added[0] != null) {
      byAge.add(added[0]);
    }
    return result[0] instanceof Number[] rs ? rs.clone() : result[0];
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
