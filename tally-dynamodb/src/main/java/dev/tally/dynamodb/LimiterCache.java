package dev.tally.dynamodb;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The last state this store saw of each limiter, so that a decision can be written straight away
 * (one request) instead of read first. A stale entry costs a failed condition and a retry, never
 * a wrong decision. Bounded: past {@link #MAX_ENTRIES} keys, entries are dropped and the next
 * decision on them starts from a guess of "no state".
 */
final class LimiterCache {
  static final int MAX_ENTRIES = 10_000;

  /** A limiter item as last seen. */
  record State(boolean present, long[] record, long version, long writer, long lastNow, long expiresAt) {
    static final State MISSING = new State(false, null, 0, 0, Long.MIN_VALUE, 0);

    static State of(Map<String, AttributeValue> item) {
      if (item == null || item.isEmpty()) {
        return MISSING;
      }
      long[] r = Items.record(item);
      if (r == null) {
        throw new IllegalStateException("the item of limiter '" + item + "' has no state record;"
            + " it was not written by Tally");
      }
      return new State(true, r, Items.longAttr(item, Items.VER, 0), Items.longAttr(item, Items.WRITER, 0),
          Items.longAttr(item, Items.NOW, Long.MIN_VALUE), Items.longAttr(item, Items.EXP, Long.MAX_VALUE));
    }
  }

  /** One key: its last seen state, and the lock that makes this process's threads take turns. */
  static final class Entry {
    final ReentrantLock lock = new ReentrantLock();
    volatile State state; // null: never seen
  }

  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  Entry entry(String key) {
    Entry e = entries.get(key);
    if (e != null) {
      return e;
    }
    if (entries.size() >= MAX_ENTRIES) {
      trim();
    }
    return entries.computeIfAbsent(key, k -> new Entry());
  }

  /** Drops about a quarter of the entries, skipping those in use. */
  private void trim() {
    int drop = MAX_ENTRIES / 4;
    for (Iterator<Entry> it = entries.values().iterator(); it.hasNext() && drop > 0; ) {
      Entry e = it.next();
      if (!e.lock.isLocked()) {
        it.remove();
        drop--;
      }
    }
  }

  void clear() {
    entries.clear();
  }
}
