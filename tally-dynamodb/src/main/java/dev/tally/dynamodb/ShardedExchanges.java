package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;
import static dev.tally.dynamodb.Table.values;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.BatchGetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.BatchGetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemResponse;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.KeysAndAttributes;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemResponse;

/**
 * Sharded counters, for keys written faster than one DynamoDB item takes (about 1,000 writes a
 * second per partition). A sharded counter is {@code N} items, {@code key + "\0" + i}; an
 * increment adds to one at random, a read sums them all with one {@code BatchGetItem}.
 *
 * <p>What that buys and costs:
 * <ul>
 *   <li>{@code incr}/{@code decr}: one {@code UpdateItem} on a random shard, then one
 *       {@code BatchGetItem} for the value returned. That value is the sum of the shards read
 *       just after the write: exact when nothing else writes meanwhile, and for a counter that
 *       only goes up, never less than the value right after this increment.
 *   <li>{@code get}: one {@code BatchGetItem}; each shard is read consistently, but not all at
 *       the same instant.
 *   <li>{@code pop}: one atomic {@code DeleteItem} per shard, summed. Each increment lands in a
 *       popped shard or in a fresh one, so a flush still never loses or repeats a count; the
 *       popped total is just not one instant's value.
 *   <li>{@code delete}, {@code keys}: supported ({@code keys} lists the counter once).
 *   <li>Not supported, with an error that says so: a non-zero default, {@code incrExisting},
 *       floating increments, {@code put}, {@code add}, expiry ({@code touch}, ttls) and
 *       transactions. Overflow is checked per shard and on the sum.
 * </ul>
 */
final class ShardedExchanges {
  private ShardedExchanges() {}

  static final char SEPARATOR = '\0';

  static String shardKey(String key, int shard) {
    return key + SEPARATOR + shard;
  }

  /** The counter a stored key belongs to: itself, or the key a shard is of. */
  static String logicalKey(String stored) {
    int sep = stored.lastIndexOf(SEPARATOR);
    return sep < 0 ? stored : stored.substring(0, sep);
  }

  static UnsupportedOperationException unsupported(String key, String what) {
    return new UnsupportedOperationException("'" + key + "' is a sharded counter, which does not"
        + " support " + what + "; see docs/dynamodb.md (hot keys) for what sharded counters do");
  }

  /** Sums the shards; shared by get and incr. */
  private static BatchGetItemRequest readAll(Table t, String key, int shards) {
    List<Map<String, AttributeValue>> keys = new ArrayList<>(shards);
    for (int i = 0; i < shards; i++) {
      keys.add(t.items.key(shardKey(key, i)));
    }
    return BatchGetItemRequest.builder()
        .requestItems(Map.of(t.name, KeysAndAttributes.builder().keys(keys).consistentRead(true).build()))
        .build();
  }

  /** Reads every shard (following UnprocessedKeys) and sums them. */
  static class Sum extends Exchange<Long> {
    final Table t;
    final int shards;
    DynamoDbRequest next;
    private long sum;
    private int found;

    Sum(Table t, String key, int shards) {
      super(key, null, t.conflictTries);
      this.t = t;
      this.shards = shards;
      this.next = readAll(t, key, shards);
    }

    @Override
    DynamoDbRequest request() {
      return next;
    }

    @Override
    void answer(DynamoDbResponse response) {
      BatchGetItemResponse r = (BatchGetItemResponse) response;
      for (Map<String, AttributeValue> item : r.responses().getOrDefault(t.name, List.of())) {
        Number v = Items.value(item);
        if (v == null) {
          continue;
        }
        found++;
        try {
          sum = Math.addExact(sum, v.longValue());
        } catch (ArithmeticException e) {
          throw new dev.tally.CounterOverflowException("sharded counter '" + key + "': the sum of its"
              + " shards leaves the signed 64-bit range");
        }
      }
      KeysAndAttributes rest = r.hasUnprocessedKeys() ? r.unprocessedKeys().get(t.name) : null;
      if (rest != null && rest.hasKeys() && !rest.keys().isEmpty()) {
        conflict(); // throttled: bounded like any retry
        next = BatchGetItemRequest.builder().requestItems(Map.of(t.name, rest)).build();
      } else {
        // A read right after an increment can find nothing if a pop took every shard meanwhile.
        summed(found == 0 && !(this instanceof Incr) ? null : sum);
      }
    }

    /** The shards are summed. */
    void summed(Long total) {
      finish(total);
    }

    @Override
    long pauseNanos() {
      return conflicts() == 0 ? 0 : ThreadLocalRandom.current().nextLong(1_000_000L << Math.min(conflicts(), 6));
    }
  }

  /**
   * An increment of one random shard, then the sum. With an operation id, the shard is the id's
   * (so a repeat finds the record), the record goes into that shard's write, and a third request
   * puts the sum returned into the record, so that a repeat returns it; a repeat that finds the
   * record without its sum (the first call was lost between its write and its read) returns the
   * sum read then.
   */
  static final class Incr extends Sum {
    private enum Stage { WRITE, SUM, RECORD, WAIT }

    /** How often a repeat looks again for the sum of a first call still between its write and its record. */
    private static final int WAITS = 40;
    private int waits;

    private static final String SUM = "if_not_exists(#v, :zero) + :d";
    private final Once once;
    private final String shard;
    private final UpdateItemRequest plain;
    private List<Map.Entry<String, AttributeValue>> prune;
    private Stage stage = Stage.WRITE;

    Incr(Table t, String key, long delta, int shards) {
      this(t, key, delta, shards, null);
    }

    Incr(Table t, String key, long delta, int shards, Once once) {
      super(t, key, shards);
      this.once = once;
      this.shard = shardKey(key, once != null
          ? Math.floorMod(once.id.value().hashCode(), shards)
          : ThreadLocalRandom.current().nextInt(shards));
      Map<String, AttributeValue> v = values(":d", n(delta), ":zero", n(0));
      // Each shard stays within 1/shards of the 64-bit range, so that no sum of shards can
      // leave it: an overflow is refused by the write's own condition, before anything changes,
      // and a sum (or a pop's) always fits.
      long hi = Long.MAX_VALUE / shards;
      long lo = Long.MIN_VALUE / shards;
      if (delta > hi || delta < lo) {
        throw overflow(key, shards);
      }
      String bound;
      if (delta > 0) {
        bound = "#v <= :hi";
        v.put(":hi", n(hi - delta));
      } else if (delta < 0) {
        bound = "#v >= :lo";
        v.put(":lo", n(lo - delta));
      } else {
        bound = "attribute_exists(#v)";
      }
      plain = t.update(shard, "SET #v = " + SUM,
          "attribute_not_exists(#v) OR (attribute_not_exists(#f) AND " + bound + ")", v, ReturnValue.NONE);
      prune = once == null ? List.of() : t.expiredRecords(shard);
      next = once == null ? plain : once.augment(plain, SUM, null, prune);
    }

    @Override
    boolean needsItemOnConditionFailure() {
      return once != null;
    }

    @Override
    Map<String, AttributeValue> failedItemKey() {
      return t.items.key(shard);
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> current) {
      if (stage == Stage.RECORD) {
        finish(result == null ? 0L : result); // the record was completed or has gone: the sum stands
        return;
      }
      if (once != null) {
        Object replayed = once.replay(current);
        if (replayed != Once.ABSENT) {
          if (once.computed(current)) {
            waitForSum(); // the first call is between its write and its record, or was lost there
          } else {
            finish((Long) replayed);
          }
          return;
        }
        if (Once.pruneStale(current, prune)) {
          prune = List.of(); // another write removed or renewed one: send again without
          conflict();
          next = once.augment(plain, SUM, null, prune);
          return;
        }
      }
      throw overflow(key, shards);
    }

    private Long result;

    /**
     * A repeat that finds the record without its sum reads the shard again, a few times, for the
     * sum the first call returns; if it never comes (that call was lost between its write and its
     * read), the sum now.
     */
    private void waitForSum() {
      if (++waits > WAITS) {
        stage = Stage.SUM;
        next = ShardedExchanges.readAll(t, key, shards);
        return;
      }
      stage = Stage.WAIT;
      next = t.get(shard);
    }

    @Override
    long pauseNanos() {
      return stage == Stage.WAIT && waits > 1 ? 5_000_000L : super.pauseNanos();
    }

    @Override
    void answer(DynamoDbResponse response) {
      if (stage == Stage.WAIT) {
        software.amazon.awssdk.services.dynamodb.model.GetItemResponse r =
            (software.amazon.awssdk.services.dynamodb.model.GetItemResponse) response;
        Map<String, AttributeValue> item = r.hasItem() ? r.item() : null;
        Object replayed = once.replay(item);
        if (replayed != Once.ABSENT && !once.computed(item)) {
          finish((Long) replayed);
        } else {
          waitForSum();
        }
        return;
      }
      if (stage == Stage.WRITE) {
        if (once != null) {
          t.rememberExpired(shard, ((UpdateItemResponse) response).attributes(), once.now, once.recordAttr);
        }
        stage = Stage.SUM;
        next = ShardedExchanges.readAll(t, key, shards);
        return;
      }
      if (stage == Stage.RECORD) {
        finish(result);
        return;
      }
      super.answer(response);
    }

    @Override
    void summed(Long total) {
      if (once == null || stage != Stage.SUM) {
        finish(total);
        return;
      }
      result = total;
      stage = Stage.RECORD;
      next = t.update(shard, "SET #I = :final", "#I = :pending",
          values(":final", once.text(total), ":pending", once.computedText()), ReturnValue.NONE,
          Map.of("#I", once.recordAttr));
    }

    @Override
    boolean retrySafe() {
      return once != null;
    }
  }

  private static dev.tally.CounterOverflowException overflow(String key, int shards) {
    return new dev.tally.CounterOverflowException("sharded counter '" + key + "': one of its " + shards
        + " shards would leave its share of the signed 64-bit range (1/" + shards + " of it, so that"
        + " their sum always fits); the value is unchanged");
  }

  /** Pops (or deletes) every shard, one atomic DeleteItem each, and sums what they held. */
  static final class PopAll extends Exchange<Long> {
    private final Table t;
    private final int shards;
    private int shard;
    private long sum;
    private boolean any;

    PopAll(Table t, String key, int shards) {
      super(key, null, t.conflictTries);
      this.t = t;
      this.shards = shards;
    }

    @Override
    DynamoDbRequest request() {
      return t.delete(shardKey(key, shard), null, null, ReturnValue.ALL_OLD);
    }

    @Override
    void answer(DynamoDbResponse response) {
      DeleteItemResponse r = (DeleteItemResponse) response;
      if (r.hasAttributes() && !r.attributes().isEmpty()) {
        Number v = Items.value(r.attributes());
        if (v != null) {
          any = true;
          sum += v.longValue(); // exact: each shard holds at most 1/shards of the range
        }
      }
      if (++shard == shards) {
        finish(any ? sum : null);
      }
    }
  }
}
