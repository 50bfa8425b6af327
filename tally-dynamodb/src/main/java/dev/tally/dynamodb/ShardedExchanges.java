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
        finish(found == 0 && !(this instanceof Incr) ? null : sum);
      }
    }

    @Override
    long pauseNanos() {
      return conflicts() == 0 ? 0 : ThreadLocalRandom.current().nextLong(1_000_000L << Math.min(conflicts(), 6));
    }
  }

  /** An increment of one random shard, then the sum. */
  static final class Incr extends Sum {
    private boolean wrote;

    Incr(Table t, String key, long delta, int shards) {
      super(t, key, shards);
      String shard = shardKey(key, ThreadLocalRandom.current().nextInt(shards));
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
      next = t.update(shard, "SET #v = if_not_exists(#v, :zero) + :d",
          "attribute_not_exists(#v) OR (attribute_not_exists(#f) AND " + bound + ")", v, ReturnValue.NONE);
    }

    @Override
    boolean needsItemOnConditionFailure() {
      return false;
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> current) {
      throw overflow(key, shards);
    }

    @Override
    void answer(DynamoDbResponse response) {
      if (!wrote) {
        wrote = true;
        next = ShardedExchanges.readAll(t, key, shards);
        return;
      }
      super.answer(response);
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
