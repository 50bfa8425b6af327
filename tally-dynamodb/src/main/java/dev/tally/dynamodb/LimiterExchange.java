package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;
import static dev.tally.dynamodb.Table.values;

import dev.tally.Decision;
import dev.tally.WrongKindException;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/**
 * One rate limiter decision: the core's state machine run in this process, made atomic by a
 * conditional write on the version of the state it was computed from.
 *
 * <h2>Why it never grants more than the limit</h2>
 *
 * Every write of a limiter's item carries a random 64-bit id, {@code _w}. The state machine runs
 * on a record read with id {@code w}, and the new record is written under the condition
 * {@code _w = w} (or {@code attribute_not_exists} for a limiter with no state). If any other
 * client wrote in between, the condition fails and nothing is written; the decision is
 * recomputed from the item that failed it, which DynamoDB returns in the same response. A grant
 * is therefore always computed from the exact state it replaces, whatever the number of
 * clients, processes and hosts. A random id rather than a counter, because an item deleted
 * when its limiter is full again and then recreated would restart a counter, and a client still
 * holding the old state at the same count would write over the new one ({@code _ver} still
 * counts the writes, for people reading the table).
 *
 * <h2>One request per decision</h2>
 *
 * Each store keeps the last state it saw of each limiter ({@link LimiterCache}) and writes from
 * it directly: when no other client wrote since, the write succeeds and the decision costs one
 * request. Decisions that change nothing (a denial, {@code available()}) are not written; they
 * are confirmed by one consistent {@code GetItem} instead, since a cached state may be stale,
 * and only written if the fresh state turns the answer around. Threads of one process take
 * turns on a key ({@link LimiterCache.Entry#lock}) so they never conflict with each other.
 *
 * <h2>Time</h2>
 *
 * DynamoDB has no clock to offer a condition, so decisions use the client's clock, and the item
 * keeps {@code _now}, the latest time any client decided at. A decision is taken at
 * {@code max(clock, _now)}: a client whose clock lags sees time stand still rather than run
 * back, which could otherwise re-open a window that another client had already closed.
 *
 * <h2>Expiry</h2>
 *
 * The machine reports how long its state matters ({@code keepNanos}); the item carries that
 * instant in {@code _exp} (exact, on the client clock) and {@code _ttl} (seconds, for DynamoDB's
 * TTL deletion). A state past {@code _exp} is the same as none. A decision that leaves the
 * limiter full deletes the item, on the same condition.
 */
final class LimiterExchange extends Exchange<Decision> {
  private enum Sent { READ, WRITE, RESET }

  /** How long a full limiter's tombstone keeps its _now before DynamoDB's TTL removes it. */
  static final long TOMBSTONE_NANOS = 86_400_000_000_000L;

  private final Table t;
  private final LimiterCall call;
  private final LimiterOperation op;
  private final long permits;
  private final LimiterCache.Entry entry;
  private final Once once; // null: no operation id

  /** What this exchange knows of the item. */
  private LimiterCache.State known;
  /** Whether {@link #known} was read during this exchange (so it needs no confirmation). */
  private boolean fresh;
  /**
   * The expiry of an expired counter found in the limiter's item, 0 if none: as good as missing,
   * and replaced by the first write, on condition that it is still that counter.
   */
  private long expiredCounter;

  private Sent sent;
  private DynamoDbRequest next;
  private Decision pendingDecision;
  private LimiterCache.State pendingState;
  private long writer;

  LimiterExchange(Table t, LimiterCall call, LimiterOperation op, long permits, LimiterCache.Entry entry) {
    this(t, call, op, permits, entry, null);
  }

  /** With {@code once}, the decision is recorded under its operation id in the same write. */
  LimiterExchange(Table t, LimiterCall call, LimiterOperation op, long permits, LimiterCache.Entry entry,
      Once once) {
    super(call.key(), t.items.key(call.key()), t.conflictTries);
    this.t = t;
    this.call = call;
    this.op = op;
    this.permits = permits;
    this.entry = entry;
    this.once = once;
    this.known = entry.state;
    plan();
  }

  /** Decides from what is known, and prepares the request that confirms or applies it. */
  private void plan() {
    LimiterCache.State k = known == null ? LimiterCache.State.MISSING : known;
    long clock = once == null ? t.now() : once.now;
    if (once != null) {
      // A record seen on the item (read, or written by this store) is certain: records only go
      // once expired. One not seen in a cached state is checked by the write's condition.
      Object replayed = once.replay(k.records());
      if (replayed != Once.ABSENT) {
        finish((Decision) replayed);
        return;
      }
    }
    if (op == LimiterOperation.RESET) {
      planReset(k, clock);
      return;
    }
    LimiterRecord stored = k.present()
        ? new LimiterRecord(k.lastNow(), k.expiresAt() - Math.max(clock, k.lastNow()) > 0 ? k.record().clone() : new long[0])
        : null;
    LimiterOutcome out = call.apply(stored, clock, op, permits);
    long now = out.decidedAt();
    boolean changes = once != null || switch (op) {
      case PEEK -> false;
      case ACQUIRE -> permits > 0 && out.decision().allowed();
      default -> true;
    } || LimiterRecord.startsWarmUp(stored == null ? null : stored.words(), out.record());
    if (changes && (out.record() != null || k.present() || once != null)) {
      // A limiter full again leaves a tombstone rather than nothing: an empty record that expires
      // at once (so the name is free for counters and limiters alike) but keeps _now, so that a
      // host whose clock lags decides no earlier than this one did instead of starting afresh at
      // an earlier instant, in a window this one has already counted. DynamoDB's TTL removes it.
      boolean full = out.record() == null;
      long[] record = full ? new long[0] : out.record();
      long version = k.present() ? k.version() + 1 : 1;
      long keep = Math.max(1, out.keepNanos());
      long exp = full ? now : keep > Long.MAX_VALUE - now ? Long.MAX_VALUE : now + keep;
      long gone = full ? now + TOMBSTONE_NANOS : exp;
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
      Map<String, AttributeValue> records = Once.liveRecords(k.records(), clock);
      if (once != null) {
        records.put(once.recordAttr, once.text(out.decision()));
        records.put(Once.MARKER, once.marker());
      }
      item.putAll(records);
      long recordsUntil = Once.latestRecordExpiry(records, clock);
      item.put(Items.TTL, Items.ttlSeconds(Math.max(gone, recordsUntil)));
      checkSize(item);
      sent = Sent.WRITE;
      pendingDecision = out.decision();
      pendingState = new LimiterCache.State(true, record, version, writer, now, exp, Map.copyOf(records));
      if (k.present()) {
        next = t.put(item, "#w = :w", values(":w", n(k.writer())));
      } else if (expiredCounter != 0) {
        next = t.put(item, "attribute_exists(#v) AND #e = :e", values(":e", n(expiredCounter)));
      } else if (!k.records().isEmpty()) { // a deleted counter's ids: still those
        next = t.put(item, "attribute_not_exists(#v) AND attribute_not_exists(#r) AND #S = :os",
            values(":os", k.records().get(Once.MARKER)), Map.of("#S", Once.MARKER));
      } else {
        next = t.put(item, "attribute_not_exists(#k)", null);
      }
      return;
    }
    if (fresh) {
      finish(out.decision());
      return;
    }
    sent = Sent.READ;
    next = t.get(key);
  }

  /**
   * Forgetting needs no version: the state goes, unless the item is a live counter. An item with
   * live operation id records keeps them (an UpdateItem that removes only the state); without,
   * it is deleted, on condition that no records arrived meanwhile.
   */
  private void planReset(LimiterCache.State k, long clock) {
    sent = Sent.RESET;
    LimiterOutcome out = call.apply(null, clock, op, permits);
    pendingDecision = out.decision();
    Map<String, AttributeValue> v = values(":now", n(clock));
    if (once == null && !Once.hasLiveRecords(k.records(), clock)) {
      pendingState = LimiterCache.State.MISSING;
      v.put(":Snow", Once.nowBound(clock));
      next = t.delete(key, "(attribute_not_exists(#v) OR #e <= :now) AND (attribute_not_exists(#S) OR #S < :Snow)",
          v, ReturnValue.NONE, Map.of("#S", Once.MARKER));
      return;
    }
    pendingState = null; // the records now on the item are not all known here: read them next time
    long until = Math.max(Once.latestRecordExpiry(k.records(), clock), once == null ? 0 : once.expiresAt);
    v.put(":ttl", Items.ttlSeconds(Math.max(until, clock)));
    UpdateItemRequest u = t.update(key, "SET #t = :ttl REMOVE #r, #n, #o, #w, #m, #e",
        "attribute_not_exists(#v) OR #e <= :now", v, ReturnValue.NONE);
    next = once == null ? u : once.augment(u, null, out.decision(), List.of());
  }

  private void checkSize(Map<String, AttributeValue> item) {
    int size = Items.sizeBound(item);
    if (size > Items.MAX_ITEM_BYTES) {
      throw new IllegalArgumentException("limiter '" + key + "' has " + call.limits().size()
          + " limits and " + item.keySet().stream().filter(a -> a.startsWith(Once.RECORD_PREFIX)).count()
          + " live operation ids, whose item would take up to " + size + " bytes; a DynamoDB item holds"
          + " at most 400 KB. Split it into several limiters, or keep operation ids for less time");
    }
  }

  @Override
  DynamoDbRequest request() {
    return next;
  }

  @Override
  void answer(DynamoDbResponse response) {
    if (sent == Sent.READ) {
      GetItemResponse r = (GetItemResponse) response;
      learn(r.hasItem() && !r.item().isEmpty() ? r.item() : null);
      plan();
      return;
    }
    entry.state = pendingState;
    finish(pendingDecision);
  }

  @Override
  void conditionFailed(Map<String, AttributeValue> item) {
    if (once != null) {
      Object replayed = once.replay(item);
      if (replayed != Once.ABSENT) {
        learn(item);
        finish((Decision) replayed);
        return;
      }
    }
    if (sent == Sent.RESET) {
      if (item != null && Items.isCounter(item) && !Items.expired(item, t.now())) {
        throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
      }
      learn(item); // records arrived meanwhile: keep them
      conflict();
      plan();
      return;
    }
    if (item != null && sent == Sent.WRITE && Items.longAttr(item, Items.WRITER, 0) == writer) {
      // Our own write, applied by an attempt whose response was lost and then retried.
      entry.state = pendingState;
      finish(pendingDecision);
      return;
    }
    learn(item);
    conflict();
    plan();
  }

  @Override
  boolean retrySafe() {
    return true; // every write carries its writer id, which recognises it
  }

  private void learn(Map<String, AttributeValue> item) {
    expiredCounter = 0;
    if (item != null && Items.isCounter(item)) {
      if (!Items.expired(item, t.now())) {
        throw new WrongKindException(key, WrongKindException.Kind.COUNTER);
      }
      expiredCounter = Items.expiresAt(item); // DynamoDB deletes expired items lazily
      Map<String, AttributeValue> records = new HashMap<>();
      for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
        if (Once.isRecordAttr(e.getKey())) {
          records.put(e.getKey(), e.getValue());
        }
      }
      known = new LimiterCache.State(false, null, 0, 0, Long.MIN_VALUE, 0, Map.copyOf(records));
    } else {
      known = LimiterCache.State.of(key, item);
    }
    entry.state = known;
    fresh = true;
  }

  @Override
  long pauseNanos() {
    int c = conflicts();
    if (c == 0) {
      return 0;
    }
    // Other clients are writing this key: spread the retries out (full jitter, 0.5 ms doubling
    // up to 25 ms), so that the client that just won does not keep winning.
    long ceiling = Math.min(25_000_000L, 500_000L << Math.min(c - 1, 10));
    return ThreadLocalRandom.current().nextLong(ceiling);
  }
}
