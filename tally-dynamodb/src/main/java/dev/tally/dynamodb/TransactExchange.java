package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;

import dev.tally.CounterOverflowException;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.spi.TxOp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.CancellationReason;
import software.amazon.awssdk.services.dynamodb.model.ConditionCheck;
import software.amazon.awssdk.services.dynamodb.model.Delete;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.ItemResponse;
import software.amazon.awssdk.services.dynamodb.model.Put;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItem;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItemsRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItemsResponse;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItem;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItemsRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactionCanceledException;

/**
 * A transaction: {@code TransactGetItems} reads every key as one serializable snapshot, the
 * operations are applied to that snapshot here (so later operations see earlier ones and every
 * result is known), and {@code TransactWriteItems} writes the outcome with, on every key, the
 * condition that it is still exactly as read. A key only read gets a {@code ConditionCheck}, so
 * the values returned are the ones current at commit. If any condition fails the whole write is
 * cancelled and the transaction runs again from a fresh read, a bounded number of times.
 *
 * <p>Read-only transactions are one request; others are two. A transaction holds at most 100
 * distinct keys (DynamoDB's limit). The write carries a client request token, so the SDK's
 * retry of a write whose answer was lost is not applied twice.
 */
final class TransactExchange extends Exchange<Number[]> {
  static final int MAX_KEYS = 100;

  private final Table t;
  private final List<TxOp> ops;
  private final List<String> keys;
  private boolean writing;
  private DynamoDbRequest next;
  private Number[] results;

  /** A counter as the transaction sees it. */
  private record Cell(Number value, long expiresAt) {}

  TransactExchange(Table t, List<TxOp> ops) {
    super(ops.get(0).key(), null, t.conflictTries);
    this.t = t;
    this.ops = ops;
    LinkedHashMap<String, Boolean> distinct = new LinkedHashMap<>();
    for (TxOp op : ops) {
      distinct.put(op.key(), Boolean.TRUE);
    }
    if (distinct.size() > MAX_KEYS) {
      throw new IllegalArgumentException("a DynamoDB transaction touches at most " + MAX_KEYS
          + " keys; this one touches " + distinct.size());
    }
    this.keys = List.copyOf(distinct.keySet());
    read();
  }

  private void read() {
    writing = false;
    List<TransactGetItem> gets = new ArrayList<>();
    for (String k : keys) {
      gets.add(TransactGetItem.builder().get(g -> g.tableName(t.name).key(t.items.key(k))).build());
    }
    next = TransactGetItemsRequest.builder().transactItems(gets).build();
  }

  @Override
  DynamoDbRequest request() {
    return next;
  }

  @Override
  void answer(DynamoDbResponse response) {
    if (writing) {
      finish(results);
      return;
    }
    List<ItemResponse> responses = ((TransactGetItemsResponse) response).responses();
    Map<String, Map<String, AttributeValue>> read = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      ItemResponse r = responses.get(i);
      read.put(keys.get(i), r.hasItem() && !r.item().isEmpty() ? r.item() : null);
    }
    apply(read);
  }

  private void apply(Map<String, Map<String, AttributeValue>> read) {
    long now = t.now();
    Map<String, Cell> working = new HashMap<>();
    for (String k : keys) {
      Map<String, AttributeValue> item = read.get(k);
      CounterExchanges.checkNotLimiter(k, item, now);
      Number v = Items.liveValue(item, now);
      working.put(k, v == null ? null : new Cell(v, Items.expiresAt(item)));
    }
    Map<String, Boolean> written = new HashMap<>();
    Number[] out = new Number[ops.size()];
    for (int i = 0; i < out.length; i++) {
      TxOp op = ops.get(i);
      String k = op.key();
      Cell cur = working.get(k);
      if (op instanceof TxOp.Incr incr) {
        long next;
        if (cur == null) {
          if (!incr.create()) {
            throw new KeyNotFoundException(k);
          }
          next = addExact(k, incr.dflt(), incr.delta());
        } else if (cur.value() instanceof Double) {
          throw new NotAnIntegerException(k);
        } else {
          next = addExact(k, cur.value().longValue(), incr.delta());
        }
        working.put(k, new Cell(next, cur == null ? 0 : cur.expiresAt()));
        written.put(k, true);
        out[i] = next;
      } else if (op instanceof TxOp.IncrDouble incr) {
        double base = cur == null ? incr.dflt() : cur.value().doubleValue();
        double next = base + incr.delta();
        if (!Double.isFinite(next)) {
          throw new CounterOverflowException("counter '" + k + "': " + base + " + " + incr.delta()
              + " is not finite; the value is unchanged");
        }
        working.put(k, new Cell(next, cur == null ? 0 : cur.expiresAt()));
        written.put(k, true);
        out[i] = next;
      } else if (op instanceof TxOp.Put put) {
        working.put(k, new Cell(put.value(), Items.expiry(now, put.ttlNanos())));
        written.put(k, true);
        out[i] = put.value();
      } else if (op instanceof TxOp.Delete) {
        working.put(k, null);
        written.put(k, true);
        out[i] = cur == null ? 0L : 1L;
      } else if (op instanceof TxOp.Get) {
        out[i] = cur == null ? null : cur.value();
      } else {
        throw new IllegalArgumentException("unknown transaction operation " + op);
      }
    }
    results = out;
    if (written.isEmpty()) {
      finish(results); // TransactGetItems was a serializable snapshot: nothing to confirm
      return;
    }
    List<TransactWriteItem> writes = new ArrayList<>();
    for (String k : keys) {
      Map<String, AttributeValue> before = read.get(k);
      Map<String, AttributeValue> values = new HashMap<>();
      String unchanged = unchanged(before, values);
      Cell after = working.get(k);
      TransactWriteItem.Builder w = TransactWriteItem.builder();
      Map<String, String> names = t.items.names(unchanged);
      Map<String, AttributeValue> vals = values.isEmpty() ? null : values;
      if (!written.containsKey(k)) {
        w.conditionCheck(ConditionCheck.builder().tableName(t.name).key(t.items.key(k))
            .conditionExpression(unchanged).expressionAttributeNames(names).expressionAttributeValues(vals).build());
      } else if (after != null) {
        Map<String, AttributeValue> item = CounterExchanges.checkSize(k, t.items.counter(k, after.value(), after.expiresAt()));
        w.put(Put.builder().tableName(t.name).item(item)
            .conditionExpression(unchanged).expressionAttributeNames(names).expressionAttributeValues(vals).build());
      } else if (before != null) {
        w.delete(Delete.builder().tableName(t.name).key(t.items.key(k))
            .conditionExpression(unchanged).expressionAttributeNames(names).expressionAttributeValues(vals).build());
      } else {
        w.conditionCheck(ConditionCheck.builder().tableName(t.name).key(t.items.key(k))
            .conditionExpression(unchanged).expressionAttributeNames(names).build());
      }
      writes.add(w.build());
    }
    writing = true;
    next = TransactWriteItemsRequest.builder()
        .transactItems(writes)
        .clientRequestToken(UUID.randomUUID().toString())
        .build();
  }

  /** A condition that the item is exactly as read. */
  private static String unchanged(Map<String, AttributeValue> before, Map<String, AttributeValue> values) {
    if (before == null) {
      return "attribute_not_exists(#k)";
    }
    if (Items.isLimiter(before)) { // expired (a live one was refused): replaced as if missing
      values.put(":e", n(Items.expiresAt(before)));
      return "attribute_exists(#r) AND #e = :e";
    }
    if (!Items.isCounter(before)) {
      throw new IllegalStateException("an item in the transaction holds no counter; it was not written by Tally");
    }
    values.put(":v", before.get(Items.VALUE));
    StringBuilder c = new StringBuilder("#v = :v");
    long exp = Items.expiresAt(before);
    if (exp != 0) {
      c.append(" AND #e = :e");
      values.put(":e", n(exp));
    } else {
      c.append(" AND attribute_not_exists(#e)");
    }
    c.append(before.containsKey(Items.FLOAT) ? " AND attribute_exists(#f)" : " AND attribute_not_exists(#f)");
    return c.toString();
  }

  private static long addExact(String key, long value, long delta) {
    long r = value + delta;
    if (((value ^ r) & (delta ^ r)) < 0) {
      throw CounterExchanges.overflow(key, value, delta);
    }
    return r;
  }

  @Override
  void canceled(TransactionCanceledException e) {
    boolean retry = false;
    if (e.hasCancellationReasons()) {
      for (CancellationReason r : e.cancellationReasons()) {
        String code = r.code();
        if ("ConditionalCheckFailed".equals(code) || "TransactionConflict".equals(code)) {
          retry = true;
        } else if (code != null && !"None".equals(code)) {
          throw e;
        }
      }
    }
    if (!retry) {
      throw e;
    }
    conflict();
    read();
  }

  @Override
  long pauseNanos() {
    int c = conflicts();
    return c == 0 ? 0 : ThreadLocalRandom.current().nextLong(1_000_000L << Math.min(c, 4));
  }
}
