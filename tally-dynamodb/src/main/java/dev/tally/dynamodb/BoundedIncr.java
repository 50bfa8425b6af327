package dev.tally.dynamodb;

import dev.tally.KeyNotFoundException;
import dev.tally.spi.CounterMath;
import dev.tally.spi.TxOp;
import java.util.HashMap;
import java.util.Map;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;

/**
 * A bounded increment alone ({@link CounterMath#addWithin}): a consistent {@code GetItem}, the
 * decision here, then a {@code PutItem} conditioned on the item being exactly as read. A refusal
 * writes nothing, and the value it reports was current at the read. If the condition fails, the
 * item the server returns is the new reading, decided on again without another read. Two
 * requests where {@link TransactExchange} would send the same two as transactions, which not
 * every server has. Like a transaction it takes this process's turn on the key, so threads of one
 * process do not make each other's conditions fail.
 */
final class BoundedIncr extends Exchange<Number[]> {
  private final Table t;
  private final TxOp.Incr op;
  private DynamoDbRequest next;
  private long result;

  BoundedIncr(Table t, TxOp.Incr op) {
    super(op.key(), t.items.key(op.key()), t.conflictTries);
    this.t = t;
    this.op = op;
    this.next = t.get(op.key());
  }

  @Override
  DynamoDbRequest request() {
    return next;
  }

  @Override
  void answer(DynamoDbResponse response) {
    if (response instanceof GetItemResponse r) {
      decide(r.hasItem() && !r.item().isEmpty() ? r.item() : null);
    } else {
      finish(new Number[] {result});
    }
  }

  private void decide(Map<String, AttributeValue> before) {
    long now = t.now();
    CounterExchanges.checkNotLimiter(key, before, now);
    Number v = Items.liveValue(before, now);
    long expiresAt = 0;
    if (v == null) {
      if (!op.create()) {
        throw new KeyNotFoundException(key);
      }
      result = CounterMath.addWithin(key, op.dflt(), op.delta(), op.bounds());
    } else {
      result = CounterMath.addWithin(key, CounterMath.integer(key, v), op.delta(), op.bounds());
      expiresAt = Items.expiresAt(before);
    }
    Map<String, AttributeValue> values = new HashMap<>();
    String unchanged = OnceExchanges.asRead(before, values);
    Map<String, String> names = new HashMap<>();
    if (unchanged.contains("#S")) {
      names.put("#S", Once.MARKER);
    }
    Map<String, AttributeValue> item = t.items.counter(key, result, expiresAt);
    // Live operation id records on the item are carried over (expired ones dropped).
    Map<String, AttributeValue> records = Once.liveRecords(before, now);
    item.putAll(records);
    if (!records.isEmpty() && expiresAt != 0) {
      item.put(Items.TTL, Items.ttlSeconds(Math.max(Once.latestRecordExpiry(before, now), expiresAt)));
    }
    CounterExchanges.checkSize(key, item);
    next = t.put(item, unchanged, values, names);
  }

  @Override
  void conditionFailed(Map<String, AttributeValue> current) {
    conflict();
    if (current == null) {
      next = t.get(key);
    } else {
      decide(current);
    }
  }

  @Override
  long pauseNanos() {
    return conflictPauseNanos();
  }
}
