package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;
import static dev.tally.dynamodb.Table.values;

import dev.tally.StoreException;
import dev.tally.WrongKindException;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyMachine;
import dev.tally.spi.ConcurrencyRecord;
import dev.tally.spi.ConcurrencyResult;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;

/**
 * One step of a concurrency limit: a consistent read of the limit's item, tally-core's
 * {@link ConcurrencyMachine} run here, and a write conditioned on the item being the one read.
 *
 * <p>The item holds the {@link ConcurrencyRecord}'s words in {@code rec}, {@code _fmt} =
 * {@link #FORMAT} (a rate limiter's item has {@code LimiterRecord.VERSION} there, and each refuses
 * the other's), and {@code _w}, a random id of the write that made it: the write's condition is
 * {@code _w = } the id read (or no item), so a grant is always computed from the exact state it
 * replaces, whoever else writes (as {@link LimiterExchange} argues). A failed condition returns the
 * item that failed it, and the step is decided again from it, up to the store's conflict tries;
 * threads of one process take turns on the key first, so they never conflict with each other.
 * A step that changes nothing is answered from the consistent read.
 *
 * <p>Clock: DynamoDB has none to offer, so the store's {@code TimeSource}, never earlier than the
 * record's latest instant. The item never expires (no {@code _ttl}): the fencing counter outlives
 * every lease.
 */
final class ConcurrencyExchange extends Exchange<ConcurrencyResult> {
  /** {@code _fmt} of a concurrency limit's item. */
  static final long FORMAT = -1;

  private enum Sent { READ, WRITE }

  private final Table t;
  private final ConcurrencyCall call;
  private Sent sent;
  private DynamoDbRequest next;
  private ConcurrencyResult pending;
  private long writer;

  ConcurrencyExchange(Table t, ConcurrencyCall call) {
    super(call.key(), t.items.key(call.key()), t.conflictTries);
    this.t = t;
    this.call = call;
    this.sent = Sent.READ;
    this.next = t.get(key);
  }

  @Override
  DynamoDbRequest request() {
    return next;
  }

  @Override
  void answer(DynamoDbResponse response) {
    if (sent == Sent.READ) {
      GetItemResponse r = (GetItemResponse) response;
      plan(r.hasItem() && !r.item().isEmpty() ? r.item() : null);
      return;
    }
    finish(pending);
  }

  @Override
  void conditionFailed(Map<String, AttributeValue> current) {
    if (current != null && writer != 0 && Items.longAttr(current, Items.WRITER, 0) == writer) {
      finish(pending); // our own write, applied by an attempt whose answer was lost
      return;
    }
    conflict();
    plan(current);
  }

  @Override
  boolean retrySafe() {
    return true; // a write is recognised by its _w
  }

  private void plan(Map<String, AttributeValue> item) {
    long now = t.now();
    ConcurrencyRecord stored = null;
    String condition;
    Map<String, AttributeValue> values;
    if (item == null) {
      condition = "attribute_not_exists(#k)";
      values = null;
    } else if (Items.isCounter(item)) {
      if (!Items.expired(item, now)) {
        throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
      }
      condition = "attribute_exists(#v) AND #e = :e"; // still that expired counter
      values = values(":e", item.get(Items.EXP));
    } else {
      long[] words = Items.record(item);
      if (words == null || Items.longAttr(item, Items.FORMAT, 0) != FORMAT) {
        throw new StoreException("'" + key + "' holds a rate limiter or another value, not a concurrency limit;"
            + " use another name");
      }
      stored = ConcurrencyRecord.fromWords(key, words);
      condition = "#w = :w";
      values = values(":w", n(Items.longAttr(item, Items.WRITER, 0)));
    }
    ConcurrencyMachine.Outcome out = ConcurrencyMachine.apply(stored, now, call);
    if (!out.changed()) {
      finish(out.result());
      return;
    }
    do {
      writer = ThreadLocalRandom.current().nextLong();
    } while (writer == 0);
    Map<String, AttributeValue> written = new HashMap<>();
    written.put(t.items.keyAttribute, AttributeValue.fromS(key));
    written.put(Items.REC, Items.record(out.next().toWords()));
    written.put(Items.FORMAT, n(FORMAT));
    written.put(Items.WRITER, n(writer));
    written.put(Items.VER, n(item == null ? 1 : Items.longAttr(item, Items.VER, 0) + 1));
    pending = out.result();
    sent = Sent.WRITE;
    next = t.put(written, condition, values);
  }
}
