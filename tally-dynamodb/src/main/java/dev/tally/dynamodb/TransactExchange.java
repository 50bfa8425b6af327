package dev.tally.dynamodb;


import dev.tally.KeyNotFoundException;
import dev.tally.spi.CounterMath;
import dev.tally.spi.TxOp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
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
  private final Once once; // null: no operation id
  private final List<TxOp> ops;
  private final List<String> keys;
  private boolean writing;
  private DynamoDbRequest next;
  private Number[] results;

  /** A counter as the transaction sees it. */
  private record Cell(Number value, long expiresAt) {}

  /**
   * With {@code once}, the id's record goes into the first key's item in the same
   * TransactWriteItems, and a snapshot that already holds it replays its results.
   */
  TransactExchange(Table t, List<TxOp> ops, Once once) {
    super(ops.get(0).key(), null, t.conflictTries);
    this.t = t;
    this.once = once;
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
    long now = once == null ? t.now() : once.now;
    if (once != null) {
      Object replayed = once.replay(read.get(key));
      if (replayed != Once.ABSENT) {
        finish((Number[]) replayed);
        return;
      }
    }
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
          next = sum(k, incr.dflt(), incr);
        } else {
          next = sum(k, CounterMath.integer(k, cur.value()), incr);
        }
        working.put(k, new Cell(next, cur == null ? 0 : cur.expiresAt()));
        written.put(k, true);
        out[i] = next;
      } else if (op instanceof TxOp.IncrDouble incr) {
        double next = CounterMath.add(k, cur == null ? incr.dflt() : cur.value().doubleValue(), incr.delta());
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
    if (written.isEmpty() && once == null) {
      finish(results); // TransactGetItems was a serializable snapshot: nothing to confirm
      return;
    }
    if (once != null) {
      written.put(key, true); // the record goes into the first key's item, even if only read
    }
    List<TransactWriteItem> writes = new ArrayList<>();
    for (String k : keys) {
      Map<String, AttributeValue> before = read.get(k);
      Map<String, AttributeValue> values = new HashMap<>();
      String unchanged = OnceExchanges.asRead(before, values);
      Cell after = working.get(k);
      TransactWriteItem.Builder w = TransactWriteItem.builder();
      Map<String, String> names = new HashMap<>(t.items.names(unchanged));
      if (unchanged.contains("#S")) {
        names.put("#S", Once.MARKER);
      }
      Map<String, AttributeValue> vals = values.isEmpty() ? null : values;
      // Live operation id records on a written item are carried over (expired ones dropped).
      Map<String, AttributeValue> records = Once.liveRecords(before, now);
      long recordsUntil = Once.latestRecordExpiry(before, now);
      if (once != null && k.equals(key)) {
        records.put(once.recordAttr, once.text(results));
        records.put(Once.MARKER, once.marker());
        recordsUntil = Math.max(recordsUntil, once.expiresAt);
      }
      if (!written.containsKey(k)) {
        w.conditionCheck(ConditionCheck.builder().tableName(t.name).key(t.items.key(k))
            .conditionExpression(unchanged).expressionAttributeNames(names).expressionAttributeValues(vals).build());
      } else if (after != null || !records.isEmpty()) {
        Map<String, AttributeValue> item = after != null
            ? t.items.counter(k, after.value(), after.expiresAt())
            : new HashMap<>(t.items.key(k)); // a deleted counter whose ids live on
        item.putAll(records);
        if (!records.isEmpty() && (after == null || after.expiresAt() != 0)) {
          item.put(Items.TTL, Items.ttlSeconds(Math.max(recordsUntil, after == null ? 0 : after.expiresAt())));
        }
        CounterExchanges.checkSize(k, item);
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

  /**
   * A bounded increment is decided on the snapshot like any other: a refusal writes nothing, and
   * the value it reports was current at the snapshot; an applied one is confirmed by the write's
   * condition, or the whole transaction reads again.
   */
  private static long sum(String k, long value, TxOp.Incr incr) {
    return incr.bounds() == null
        ? CounterMath.add(k, value, incr.delta())
        : CounterMath.addWithin(k, value, incr.delta(), incr.bounds());
  }

  @Override
  void canceled(TransactionCanceledException e) {
    conflictOrRethrow(e);
    read();
  }

  @Override
  long pauseNanos() {
    return conflictPauseNanos();
  }

  @Override
  boolean retrySafe() {
    return true; // the write carries a client request token
  }
}
