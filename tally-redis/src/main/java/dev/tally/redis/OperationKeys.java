package dev.tally.redis;

import dev.tally.spi.OperationId;
import dev.tally.spi.StoreContext;
import io.lettuce.core.cluster.SlotHash;

/**
 * Where an operation id's record lives, and for how long (docs/redis.md#operation-ids).
 *
 * <p>The record is a small hash, written by the same script as the operation it records, so
 * the two are one atomic step: {@code r} holds {@link dev.tally.spi.OperationRecord}'s text
 * (fingerprint and result), and under a caller's clock {@code exp} holds the instant on that
 * clock at which the record lapses. It is a hash rather than a string so that {@code keys},
 * which lists strings only, never mistakes it for a counter.
 *
 * <ul>
 *   <li>On one server (or through Sentinel) the key is {@code tally:op:<id>}: one id space for
 *       the whole store, so an id reused for another key is caught.
 *   <li>On a Cluster a script's keys must share a slot, so the record takes the operation key's
 *       hash tag: {@code tally:op:{<tag>}:<id>}, where the tag is the key's own hash tag if it has
 *       one, else the whole key. Ids are then one space per tag: an id reused for a key with
 *       another tag is not seen as a conflict (it applies as a new operation). A key without a
 *       hash tag that contains a '}' cannot be named by a tag, and is refused.
 * </ul>
 */
final class OperationKeys {
  private static final String PREFIX = "tally:op:";
  private static final long DAY_MILLIS = 86_400_000L;

  private final boolean cluster;
  private final long retentionNanos;

  OperationKeys(boolean cluster, StoreContext context) {
    this.cluster = cluster;
    this.retentionNanos = context.operationRetentionNanos();
  }

  /** The record key of {@code id} for an operation whose (first) key is {@code key}. */
  String record(OperationId id, String key) {
    if (!cluster) {
      return PREFIX + id.value();
    }
    String record = PREFIX + "{" + hashTag(key) + "}:" + id.value();
    if (SlotHash.getSlot(record) != SlotHash.getSlot(key)) {
      throw new IllegalArgumentException("an operation id on Redis Cluster keeps its record in the"
          + " key's hash slot, named by the key's hash tag; key '" + key + "' has no hash tag and"
          + " contains '}', so no tag can name its slot. Give the key a hash tag, e.g."
          + " tally.counters(\"{user42}\")");
    }
    return record;
  }

  /** The part of {@code key} Redis Cluster hashes: its first non-empty {...}, or all of it. */
  static String hashTag(String key) {
    int open = key.indexOf('{');
    if (open >= 0) {
      int close = key.indexOf('}', open + 1);
      if (close > open + 1) {
        return key.substring(open + 1, close);
      }
    }
    return key;
  }

  /**
   * The record's Redis expiry in milliseconds: the retention, rounded up; under a caller's clock
   * a day more, since that clock may stand still while real time runs ({@code exp} decides).
   */
  long pexpireMillis(boolean clockOverridden) {
    long ms = CounterScript.millis(retentionNanos);
    return clockOverridden ? saturatedAdd(ms, DAY_MILLIS) : ms;
  }

  /** When a record written at {@code now} lapses on the caller's clock. */
  long expiry(long now) {
    return saturatedAdd(now, retentionNanos);
  }

  static String hex(long fingerprint) {
    String hex = Long.toHexString(fingerprint);
    return "0".repeat(16 - hex.length()) + hex;
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
