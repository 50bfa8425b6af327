package dev.tally.dynamodb;

import dev.tally.spi.LimiterRecord;
import java.util.HashMap;
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

  /**
   * A limiter item as last seen: its state (absent when {@code present} is false), and the
   * operation id records it carries, which every rewrite of the item carries over.
   */
  record State(boolean present, long[] record, long version, long writer, long lastNow, long expiresAt,
      Map<String, AttributeValue> records) {
    static final State MISSING = new State(false, null, 0, 0, Long.MIN_VALUE, 0, Map.of());

    /**
     * Reads a limiter's item (or one holding only id records, which is as good as missing).
     *
     * @throws dev.tally.StoreException if the state is in another record format
     */
    static State of(String key, Map<String, AttributeValue> item) {
      if (item == null || item.isEmpty()) {
        return MISSING;
      }
      Map<String, AttributeValue> records = new HashMap<>();
      for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
        if (Once.isRecordAttr(e.getKey())) {
          records.put(e.getKey(), e.getValue());
        }
      }
      if (Items.recordsOnly(item)) {
        return new State(false, null, 0, 0, Long.MIN_VALUE, 0, Map.copyOf(records));
      }
      long[] r = Items.record(item);
      if (r == null) {
        throw new IllegalStateException("the item of limiter '" + key + "' has no state record;"
            + " it was not written by Tally");
      }
      long now = Items.longAttr(item, Items.NOW, Long.MIN_VALUE);
      // Items written before the format was stored hold format 1, the first.
      int format = (int) Items.longAttr(item, Items.FORMAT, 1);
      LimiterRecord checked = LimiterRecord.read(key, format, now, r);
      return new State(true, checked.words(), Items.longAttr(item, Items.VER, 0), Items.longAttr(item, Items.WRITER, 0),
          now, Items.longAttr(item, Items.EXP, Long.MAX_VALUE), Map.copyOf(records));
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
