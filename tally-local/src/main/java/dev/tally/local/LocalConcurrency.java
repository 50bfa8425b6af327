package dev.tally.local;

import static dev.tally.local.Layout.SEALED;

import dev.tally.StoreException;
import dev.tally.TimeSource;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyMachine;
import dev.tally.spi.ConcurrencyRecord;
import dev.tally.spi.ConcurrencyResult;
import java.nio.file.Path;

/**
 * Concurrency limits in the file: a limit's {@link ConcurrencyRecord} is a state record in the key
 * heap, like a rate limiter's, and each step runs {@link ConcurrencyMachine} in one {@link Op}
 * under the key's slot lock, so processes sharing the file never over-grant, and a step is
 * committed or rolled back whole, also when its process dies mid-way (the journal).
 *
 * <p>Time is this store's {@link TimeSource} (the file has no clock), never earlier than the
 * record's {@code decidedAt}, so a process whose clock lags cannot revive a lease another process
 * saw expire. The slot never expires: the fencing counter outlives every lease. A record holds at
 * most {@link #MAX_LEASES} leases (the largest heap record), so a limit whose holders would need
 * more is refused with an error naming the bound; a waiter's ticket that would not fit is not taken
 * (the waiter stays unqueued, {@link ConcurrencyMachine}).
 */
final class LocalConcurrency {
  /** Leases that fit in the largest state record. */
  static final int MAX_LEASES = (Layout.MAX_RECORD_WORDS - ConcurrencyRecord.HEADER_WORDS) / ConcurrencyRecord.LEASE_WORDS;

  private final LocalStore store;
  private final Table table;
  private final TimeSource time;
  private final Path path;

  LocalConcurrency(LocalStore store, Table table, TimeSource time, Path path) {
    this.store = store;
    this.table = table;
    this.time = time;
    this.path = path;
  }

  ConcurrencyResult step(ConcurrencyCall call) {
    Key key = new Key(call.key());
    try (Op op = store.begin()) {
      Table.Held h = op.lockRecord(key, true);
      ConcurrencyRecord stored = null;
      if (h.record) {
        KeyHeap.State st = h.mask == (h.bits ^ SEALED) && h.bits >>> 32 == 0
            ? table.heap.readRecord((int) h.bits, key.hash) : null;
        if (st == null || !st.checked()) {
          throw new StoreException("the state of concurrency limit '" + key + "' in " + path
              + " is damaged (the record at " + h.bits + " of the slot at offset " + h.slot
              + " fails its check); delete the key to start it afresh");
        }
        if (st.words().length > 0) { // else a full rate limiter's tombstone: nothing held
          stored = ConcurrencyRecord.fromWords(key.string, st.words());
        }
      }
      ConcurrencyMachine.Outcome out = ConcurrencyMachine.apply(stored, time.nanos(), call, Layout.MAX_RECORD_WORDS);
      if (out.changed()) {
        if (out.next().words() > Layout.MAX_RECORD_WORDS) {
          throw new StoreException("concurrency limit '" + key + "' would hold " + out.next().size()
              + " leases and " + out.next().waiting() + " waiters' tickets; the file store keeps at most "
              + MAX_LEASES + " leases per limit, fewer while waiters queue (use fewer, heavier leases)");
        }
        long[] words = out.next().toWords();
        h.setRecord(table.heap.allocateRecord(key.hash, out.next().decidedAt(), words), 0); // 0: never expires
      }
      store.commit(op);
      return out.result();
    }
  }
}
