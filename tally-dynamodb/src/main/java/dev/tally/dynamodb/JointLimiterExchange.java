package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;

import dev.tally.Decision;
import dev.tally.WrongKindException;
import dev.tally.spi.JointLimit;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionCheck;
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
 * A joint limiter decision ({@link dev.tally.spi.Store#limitAll}), as a transaction:
 * {@code TransactGetItems} reads every limiter's item as one serializable snapshot, the core's
 * machines decide on it at one instant of the client's clock ({@link JointLimit}), and, only if
 * every limiter allows, {@code TransactWriteItems} writes every new state on condition that each
 * item is still exactly as read (its writer id, {@link LimiterExchange}). If another client wrote
 * one of them meanwhile, the whole write is cancelled and the decision is taken again from a
 * fresh snapshot, a bounded number of times. A refusal writes nothing: it was true of the
 * snapshot.
 *
 * <p>Two requests when granted, one when refused; at most {@link TransactExchange#MAX_KEYS}
 * limiters. The write carries a client request token, so a retried write whose answer was lost
 * is not applied twice.
 */
final class JointLimiterExchange extends Exchange<Decision[]> {
  private final Table t;
  private final List<LimiterCall> calls;
  private final long permits;
  private final LimiterCache.Entry[] entries;
  private boolean writing;
  private DynamoDbRequest next;
  private Decision[] decisions;
  private LimiterCache.State[] pending;

  JointLimiterExchange(Table t, List<LimiterCall> calls, long permits, LimiterCache.Entry[] entries) {
    super(calls.get(0).key(), null, t.conflictTries);
    if (calls.size() > TransactExchange.MAX_KEYS) {
      throw new IllegalArgumentException("a joint decision on DynamoDB takes at most " + TransactExchange.MAX_KEYS
          + " limiters (a transaction's limit); this one takes " + calls.size());
    }
    this.t = t;
    this.calls = calls;
    this.permits = permits;
    this.entries = entries;
    read();
  }

  private void read() {
    writing = false;
    List<TransactGetItem> gets = new ArrayList<>(calls.size());
    for (LimiterCall c : calls) {
      gets.add(TransactGetItem.builder().get(g -> g.tableName(t.name).key(t.items.key(c.key()))).build());
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
      for (int i = 0; i < entries.length; i++) {
        entries[i].state = pending[i];
      }
      finish(decisions);
      return;
    }
    List<ItemResponse> responses = ((TransactGetItemsResponse) response).responses();
    int n = calls.size();
    long clock = t.now();
    List<Map<String, AttributeValue>> read = new ArrayList<>(n);
    LimiterCache.State[] known = new LimiterCache.State[n];
    LimiterRecord[] stored = new LimiterRecord[n];
    for (int i = 0; i < n; i++) {
      ItemResponse r = responses.get(i);
      Map<String, AttributeValue> item = r.hasItem() && !r.item().isEmpty() ? r.item() : null;
      String key = calls.get(i).key();
      read.add(item);
      if (item != null && Items.isCounter(item)) {
        if (!Items.expired(item, clock)) {
          throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
        }
        known[i] = LimiterCache.State.MISSING; // an expired counter: replaced, on condition it is still that
      } else {
        known[i] = LimiterCache.State.of(key, item);
        entries[i].state = known[i];
      }
      LimiterCache.State k = known[i];
      stored[i] = k.present()
          ? new LimiterRecord(k.lastNow(), k.expiresAt() - Math.max(clock, k.lastNow()) > 0 ? k.record() : new long[0])
          : null;
    }
    JointLimit.Result result = JointLimit.decide(calls, stored, clock, permits);
    decisions = result.decisions();
    if (!result.allowed() || permits == 0) {
      finish(decisions); // true of the snapshot, which TransactGetItems took serializably
      return;
    }
    pending = new LimiterCache.State[n];
    List<TransactWriteItem> writes = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      writes.add(write(i, read.get(i), known[i], result.outcomes()[i], clock));
    }
    writing = true;
    next = TransactWriteItemsRequest.builder()
        .transactItems(writes)
        .clientRequestToken(UUID.randomUUID().toString())
        .build();
  }

  /** Limiter {@code i}'s new state as {@link LimiterExchange} writes it, on condition that the item is as read. */
  private TransactWriteItem write(int i, Map<String, AttributeValue> before, LimiterCache.State k,
      LimiterOutcome out, long clock) {
    String key = calls.get(i).key();
    Map<String, AttributeValue> values = new HashMap<>();
    String unchanged = OnceExchanges.asRead(before, values);
    Map<String, String> names = new HashMap<>(t.items.names(unchanged));
    if (unchanged.contains("#S")) {
      names.put("#S", Once.MARKER);
    }
    Map<String, AttributeValue> vals = values.isEmpty() ? null : values;
    if (out.record() == null && !k.present()) {
      // Granted and full at once (a limit too large to notice the permits): nothing to store.
      pending[i] = k;
      return TransactWriteItem.builder().conditionCheck(ConditionCheck.builder().tableName(t.name)
          .key(t.items.key(key)).conditionExpression(unchanged).expressionAttributeNames(names)
          .expressionAttributeValues(vals).build()).build();
    }
    long now = out.decidedAt();
    boolean full = out.record() == null;
    long[] record = full ? new long[0] : out.record();
    long version = k.present() ? k.version() + 1 : 1;
    long keep = Math.max(1, out.keepNanos());
    long exp = full ? now : keep > Long.MAX_VALUE - now ? Long.MAX_VALUE : now + keep;
    long gone = full ? now + LimiterExchange.TOMBSTONE_NANOS : exp;
    long writer;
    do {
      writer = ThreadLocalRandom.current().nextLong();
    } while (writer == 0); // 0 stands for "no id"
    Map<String, AttributeValue> item = new HashMap<>();
    item.put(t.items.keyAttribute, AttributeValue.fromS(key));
    item.put(Items.REC, Items.record(record));
    item.put(Items.FORMAT, n(LimiterRecord.VERSION));
    item.put(Items.VER, n(version));
    item.put(Items.NOW, n(now));
    item.put(Items.EXP, n(exp));
    item.put(Items.WRITER, n(writer));
    // Live operation id records stay with the item; expired ones are dropped by the rewrite.
    Map<String, AttributeValue> records = Once.liveRecords(before, clock);
    item.putAll(records);
    item.put(Items.TTL, Items.ttlSeconds(Math.max(gone, Once.latestRecordExpiry(before, clock))));
    pending[i] = new LimiterCache.State(true, record, version, writer, now, exp, Map.copyOf(records));
    return TransactWriteItem.builder().put(Put.builder().tableName(t.name).item(item)
        .conditionExpression(unchanged).expressionAttributeNames(names).expressionAttributeValues(vals).build())
        .build();
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
