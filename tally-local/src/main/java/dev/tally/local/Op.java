package dev.tally.local;

import dev.tally.TimeSource;
import dev.tally.WrongKindException;
import java.util.ArrayList;
import java.util.List;

/**
 * One locked operation: a journal entry and the slots it has locked, sealed and imaged. Ends
 * with {@link #commit} or, if it is closed without one, with an abort that changes nothing.
 *
 * <pre>{@code
 * try (Op op = store.begin()) {
 *   Table.Held h = op.lock(key, true);
 *   h.set(false, 42, 0);
 *   op.commit();
 * }
 * }</pre>
 */
final class Op implements AutoCloseable {
  final Table table;
  final Journal.Entry entry;
  final List<Table.Held> held = new ArrayList<>(2);
  final LocalOptions.Sync sync;
  private final TimeSource time;
  private boolean done;

  Op(Table table, Journal.Entry entry, TimeSource time, LocalOptions.Sync sync) {
    this.table = table;
    this.entry = entry;
    this.time = time;
    this.sync = sync;
  }

  /** The time, read when a slot is locked, to decide whether its key has expired. */
  long now() {
    return time.nanos();
  }

  /** Locks {@code key}; see {@link Table#lock}. */
  Table.Held lock(Key key, boolean create) {
    return table.lock(this, key, create);
  }

  /** Locks {@code key}, claiming its slot first: see {@link Table#lock(Op, Key, boolean, boolean)}. */
  Table.Held lockLikelyNew(Key key) {
    return table.lock(this, key, true, true);
  }

  /** Locks {@code key} for a counter operation: refused if it holds a live rate limiter. */
  Table.Held lockCounter(Key key, boolean create) {
    Table.Held h = table.lock(this, key, create);
    if (h != null && h.present && h.record) {
      throw new WrongKindException(key.string, WrongKindException.Kind.LIMITER);
    }
    return h;
  }

  /** Locks {@code key} for a rate limiter: refused if it holds a live counter. */
  Table.Held lockRecord(Key key, boolean create) {
    Table.Held h = table.lock(this, key, create);
    if (h != null && h.present && !h.record) {
      throw new WrongKindException(key.string, WrongKindException.Kind.COUNTER);
    }
    return h;
  }

  /** Set by {@link Table#commit} once the entry is marked committed: from then on it is applied. */
  boolean applied;

  /**
   * Applies the changes. If it fails before they are applied (the journal could not be forced),
   * nothing changed and {@link #close} aborts; if it fails after (the slots could not be forced),
   * the changes stand, the locks are released, and the failure says they may not be on the device.
   */
  void commit() {
    try {
      table.commit(this, true);
    } finally {
      if (applied) {
        done = true;
        finish();
      }
    }
  }

  @Override
  public void close() {
    if (!done) {
      done = true;
      for (Table.Held h : held) {
        h.changed = false;
      }
      table.commit(this, false);
      finish();
    }
  }

  private void finish() {
    entry.release();
    for (Table.Held h : held) {
      if (h.freeKey) {
        table.heap.free(h.keyRef);
      }
      if (h.freeRecord != 0) {
        table.heap.free(h.freeRecord);
      }
    }
  }
}
