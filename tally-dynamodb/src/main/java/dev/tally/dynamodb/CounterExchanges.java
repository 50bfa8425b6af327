package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;
import static dev.tally.dynamodb.Table.values;

import dev.tally.CounterOverflowException;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.WrongKindException;
import dev.tally.spi.CounterMath;
import dev.tally.spi.Store;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemResponse;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.ScanRequest;
import software.amazon.awssdk.services.dynamodb.model.ScanResponse;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemResponse;

/**
 * The counter operations, each one request in the common case.
 *
 * <h2>Expiry in conditions</h2>
 *
 * DynamoDB's TTL deletion runs in the background and may lag by days, so an expired item can
 * still be in the table. Every operation therefore treats an item whose {@code _exp} has passed
 * (on the client clock, which it sends as {@code :now}) as missing: reads filter it, and writes
 * carry it in their condition. An increment is one {@code UpdateItem} whose condition accepts
 * a missing or live integer counter; an expired one fails the condition, and the item that comes
 * back with the failure shows why, so the second request resets it to {@code default + delta}
 * without an expiry, itself conditional on the item still being expired.
 *
 * <h2>Exact 64-bit integers</h2>
 *
 * DynamoDB numbers are 38-digit decimals, so they would happily go past {@code Long.MAX_VALUE}.
 * An increment's condition bounds the old value ({@code v <= MAX - delta} for a positive delta),
 * so an increment that would overflow fails its condition and writes nothing; the failed item
 * then tells overflow apart from the other reasons.
 *
 * <h2>Floating counters</h2>
 *
 * A floating increment is also one {@code UpdateItem}: DynamoDB adds the decimal forms exactly,
 * so {@code 0.1 + 0.2} is {@code 0.3} rather than Java's {@code 0.30000000000000004}, and the
 * result is read back as the nearest double. Values outside DynamoDB's number range (beyond
 * 1e126 or below 1e-130 in magnitude) or sums it refuses are stored as exact strings and updated
 * with a conditional read-modify-write in Java arithmetic, which also detects infinities.
 *
 * <h2>Counters and limiters share the key space</h2>
 *
 * A limiter's state lives in an item keyed by the limiter's name. Counter writes are conditional
 * on the item not holding live limiter state, so the two never overwrite each other; a clash is
 * reported as a {@link WrongKindException}. An item that has expired, of either kind, is missing for
 * both (DynamoDB deletes expired items lazily, within days): a counter write replaces an expired
 * limiter's item, and a limiter an expired counter's.
 */
final class CounterExchanges {
  private CounterExchanges() {}

  static final String LIVE = "(attribute_not_exists(#e) OR #e > :now)";
  /** Not live limiter state; needs {@code :now}. */
  static final String NOT_LIMITER = "(attribute_not_exists(#r) OR #e <= :now)";
  /**
   * No limiter state at all, live or expired: an {@code UpdateItem} that adds a counter to an
   * item must not leave a limiter's attributes beside it (an expired limiter is replaced by
   * {@link #REMOVE_ALL_BUT_COUNTER} instead).
   */
  static final String NO_LIMITER_STATE = "attribute_not_exists(#r)";
  /** What turns an expired item of either kind into an integer counter: every other attribute goes. */
  static final String REMOVE_ALL_BUT_COUNTER = "REMOVE #f, #e, #t, #r, #n, #o, #w, #m";
  /** The same for a floating counter, which sets {@code #f} itself. */
  static final String REMOVE_ALL_BUT_FLOAT = "REMOVE #e, #t, #r, #n, #o, #w, #m";

  static CounterOverflowException overflow(String key, long value, long delta) {
    return CounterMath.overflow(key, value, delta);
  }

  static WrongKindException limiterHere(String key) {
    return new WrongKindException(key, WrongKindException.Kind.LIMITER);
  }

  /** Refuses an item holding live limiter state; an expired one counts as missing. */
  static void checkNotLimiter(String key, Map<String, AttributeValue> item, long now) {
    if (item != null && Items.isLimiter(item) && !Items.expired(item, now)) {
      throw limiterHere(key);
    }
  }

  // ------------------------------------------------------------------ incr

  /** Integer increment: {@code UpdateItem SET v = if_not_exists(v, :dflt) + :d}. */
  static final class Incr extends Exchange<Long> {
    private final Table t;
    private final long delta;
    private final long dflt;
    private final boolean create;
    private final boolean createFits;
    private final long created;
    private final Once once;
    private List<Map.Entry<String, AttributeValue>> prune;
    private long now;
    private boolean resetting;
    private DynamoDbRequest next;

    Incr(Table t, String key, long delta, long dflt, boolean create) {
      this(t, key, delta, dflt, create, null);
    }

    /** With {@code once}, the increment carries an operation id: see {@link Once}. */
    Incr(Table t, String key, long delta, long dflt, boolean create, Once once) {
      super(key, t.items.key(key), t.conflictTries);
      this.t = t;
      this.once = once;
      this.prune = once == null ? List.of() : t.expiredRecords(key);
      this.delta = delta;
      this.dflt = dflt;
      this.create = create;
      long c = dflt + delta;
      this.createFits = ((dflt ^ c) & (delta ^ c)) >= 0;
      this.created = c;
      increment();
    }

    private void increment() {
      now = t.now();
      resetting = false;
      Map<String, AttributeValue> v = values(":now", n(now), ":d", n(delta));
      String bound;
      if (delta > 0) {
        bound = "#v <= :hi";
        v.put(":hi", n(Long.MAX_VALUE - delta));
      } else if (delta < 0) {
        bound = "#v >= :lo";
        v.put(":lo", n(Long.MIN_VALUE - delta));
      } else {
        bound = "attribute_exists(#v)";
      }
      String live = LIVE + " AND attribute_not_exists(#f) AND " + bound;
      String sum;
      UpdateItemRequest u;
      if (create && createFits) {
        v.put(":dflt", n(dflt));
        sum = "if_not_exists(#v, :dflt) + :d";
        u = t.update(key, "SET #v = " + sum,
            "(attribute_not_exists(#v) AND " + NO_LIMITER_STATE + ") OR (" + live + ")", v, ReturnValue.UPDATED_NEW);
      } else {
        sum = "#v + :d";
        u = t.update(key, "SET #v = " + sum, live, v, ReturnValue.UPDATED_NEW);
      }
      // With an id, the write also records it, its result computed from the same old value.
      next = once == null ? u : once.augment(u, sum, null, prune);
    }

    /** The item expired (a counter, or limiter state): restart it from the default, if it still is. */
    private void reset() {
      resetting = true;
      UpdateItemRequest u = t.update(key, "SET #v = :c " + REMOVE_ALL_BUT_COUNTER, "#e <= :now",
          values(":c", n(created), ":now", n(now)), ReturnValue.NONE);
      next = once == null ? u : once.augment(u, null, created, prune);
    }

    @Override
    DynamoDbRequest request() {
      return next;
    }

    @Override
    void answer(DynamoDbResponse response) {
      Map<String, AttributeValue> after = ((UpdateItemResponse) response).attributes();
      if (once != null) {
        t.rememberExpired(key, after, now, once.recordAttr);
      }
      if (resetting) {
        finish(created);
      } else {
        finish(Items.value(after).longValue());
      }
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> item) {
      if (once != null) {
        Object replayed = once.replay(item);
        if (replayed != Once.ABSENT) {
          finish((Long) replayed);
          return;
        }
        t.rememberExpired(key, item, now, once.recordAttr);
        if (Once.pruneStale(item, prune)) {
          prune = List.of(); // another write removed or renewed one: send again without
          conflict();
          if (resetting) {
            reset();
          } else {
            increment();
          }
          return;
        }
      }
      checkNotLimiter(key, item, now);
      if (item == null || !Items.isCounter(item) || Items.expired(item, now)) {
        if (!create) {
          throw new KeyNotFoundException(key);
        }
        if (!createFits) {
          throw overflow(key, dflt, delta);
        }
        if (item != null && Items.expired(item, now)) {
          reset();
          return;
        }
        if (item != null && !Items.recordsOnly(item)) {
          throw new IllegalStateException("the item of '" + key + "' holds neither a counter nor"
              + " limiter state; it was not written by Tally");
        }
        conflict();
        increment();
        return;
      }
      CounterMath.add(key, CounterMath.integer(key, Items.value(item)), delta); // overflow, or not an integer
      conflict(); // it changed between the request and the read: try again
      increment();
    }
  }

  /** Floating increment: one decimal {@code UpdateItem}, or Java arithmetic beyond DynamoDB's range. */
  static final class IncrDouble extends Exchange<Double> {
    private enum Mode { DECIMAL, READ, WRITE }

    private final Table t;
    private final double delta;
    private final double dflt;
    private long now;
    private Mode mode;
    private double pending;
    private DynamoDbRequest next;

    IncrDouble(Table t, String key, double delta, double dflt) {
      super(key, t.items.key(key), t.conflictTries);
      this.t = t;
      this.delta = delta;
      this.dflt = dflt;
      if (Items.fitsNumber(delta) && Items.fitsNumber(dflt)) {
        decimal();
      } else {
        read();
      }
    }

    private void decimal() {
      mode = Mode.DECIMAL;
      now = t.now();
      next = t.update(key, "SET #v = if_not_exists(#v, :dflt) + :d, #f = :true",
          "(attribute_not_exists(#v) AND " + NO_LIMITER_STATE + ") OR (" + LIVE + " AND attribute_type(#v, :N))",
          values(":dflt", Items.encodeDouble(dflt), ":d", Items.encodeDouble(delta), ":true", Items.bool(),
              ":now", n(now), ":N", AttributeValue.fromS("N")),
          ReturnValue.UPDATED_NEW);
    }

    private void read() {
      mode = Mode.READ;
      next = t.get(key);
    }

    /** The conditional write of a sum computed here from {@code item}. */
    private void writeFrom(Map<String, AttributeValue> item) {
      mode = Mode.WRITE;
      now = t.now();
      checkNotLimiter(key, item, now);
      if (item != null && Items.isLimiter(item)) { // expired: as good as missing
        pending = sum(dflt);
        next = t.update(key, "SET #v = :val, #f = :true " + REMOVE_ALL_BUT_FLOAT, "#e <= :now",
            values(":val", Items.encodeDouble(pending), ":true", Items.bool(), ":now", n(now)), ReturnValue.NONE);
      } else if (item == null || !Items.isCounter(item)) {
        if (item != null) {
          throw new IllegalStateException("the item of '" + key + "' holds no counter; it was not written by Tally");
        }
        pending = sum(dflt);
        next = t.update(key, "SET #v = :val, #f = :true", "attribute_not_exists(#v) AND attribute_not_exists(#r)",
            values(":val", Items.encodeDouble(pending), ":true", Items.bool()), ReturnValue.NONE);
      } else if (Items.expired(item, now)) {
        pending = sum(dflt);
        next = t.update(key, "SET #v = :val, #f = :true REMOVE #e, #t", "attribute_exists(#v) AND #e <= :now",
            values(":val", Items.encodeDouble(pending), ":true", Items.bool(), ":now", n(now)), ReturnValue.NONE);
      } else {
        pending = sum(Items.value(item).doubleValue());
        long exp = Items.expiresAt(item);
        Map<String, AttributeValue> v = values(":val", Items.encodeDouble(pending), ":true", Items.bool(),
            ":old", item.get(Items.VALUE));
        String sameExpiry = "attribute_not_exists(#e)";
        if (exp != 0) {
          sameExpiry = "#e = :exp";
          v.put(":exp", n(exp));
        }
        next = t.update(key, "SET #v = :val, #f = :true", "#v = :old AND " + sameExpiry, v, ReturnValue.NONE);
      }
    }

    private double sum(double base) {
      return CounterMath.add(key, base, delta);
    }

    @Override
    DynamoDbRequest request() {
      return next;
    }

    @Override
    void answer(DynamoDbResponse response) {
      switch (mode) {
        case DECIMAL -> {
          AttributeValue v = ((UpdateItemResponse) response).attributes().get(Items.VALUE);
          finish(new BigDecimal(v.n()).doubleValue());
        }
        case READ -> {
          GetItemResponse r = (GetItemResponse) response;
          writeFrom(r.hasItem() && !r.item().isEmpty() ? r.item() : null);
        }
        case WRITE -> finish(pending);
        default -> throw new AssertionError(mode);
      }
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> item) {
      checkNotLimiter(key, item, now);
      if (mode == Mode.DECIMAL && item != null && Items.isCounter(item) && !Items.expired(item, now)
          && item.get(Items.VALUE).n() != null) {
        conflict();
        decimal();
        return;
      }
      if (mode == Mode.WRITE || item == null) {
        conflict();
      }
      writeFrom(item);
    }

    @Override
    void numberRefused(DynamoDbException e) {
      if (mode != Mode.DECIMAL) {
        throw e;
      }
      read();
    }
  }

  // ------------------------------------------------------------------ reads

  /** {@code GetItem} with a consistent read; expired items read as missing. */
  static final class Get extends Exchange<Map<String, AttributeValue>> {
    private final DynamoDbRequest request;
    final long now;

    Get(Table t, String key) {
      super(key, t.items.key(key), t.conflictTries);
      this.request = t.get(key);
      this.now = t.now();
    }

    @Override
    DynamoDbRequest request() {
      return request;
    }

    @Override
    void answer(DynamoDbResponse response) {
      GetItemResponse r = (GetItemResponse) response;
      finish(r.hasItem() && !r.item().isEmpty() ? r.item() : null);
    }

    Number value() {
      checkNotLimiter(key, result(), now);
      return Items.liveValue(result(), now);
    }

    long ttl() {
      Map<String, AttributeValue> item = result();
      checkNotLimiter(key, item, now);
      if (Items.liveValue(item, now) == null) {
        return Store.TTL_MISSING;
      }
      long exp = Items.expiresAt(item);
      return exp == 0 ? Store.TTL_PERMANENT : exp - now;
    }
  }

  /**
   * {@code keys(prefix)}: a paginated, consistent {@code Scan} filtered on the prefix. It reads
   * the whole table, so it costs capacity in proportion to the table, not to the answer.
   */
  static final class Keys extends Exchange<List<String>> {
    private final Table t;
    private final long now;
    private final UnaryOperator<String> logicalKey;
    private final List<String> found = new ArrayList<>();
    private final Set<String> seen = new HashSet<>();
    private ScanRequest next;

    Keys(Table t, String prefix, UnaryOperator<String> logicalKey) {
      super(prefix, null, t.conflictTries);
      this.t = t;
      this.now = t.now();
      this.logicalKey = logicalKey;
      String filter = "attribute_exists(#v) AND " + LIVE + (prefix.isEmpty() ? "" : " AND begins_with(#k, :p)");
      Map<String, AttributeValue> v = values(":now", n(now));
      if (!prefix.isEmpty()) {
        v.put(":p", AttributeValue.fromS(prefix));
      }
      next = ScanRequest.builder()
          .tableName(t.name)
          .filterExpression(filter)
          .projectionExpression("#k")
          .expressionAttributeNames(t.items.names(filter, "#k"))
          .expressionAttributeValues(v)
          .consistentRead(true)
          .build();
    }

    @Override
    DynamoDbRequest request() {
      return next;
    }

    @Override
    void answer(DynamoDbResponse response) {
      ScanResponse r = (ScanResponse) response;
      for (Map<String, AttributeValue> item : r.items()) {
        String k = logicalKey.apply(item.get(t.items.keyAttribute).s());
        if (k != null && seen.add(k)) {
          found.add(k);
        }
      }
      if (r.hasLastEvaluatedKey() && !r.lastEvaluatedKey().isEmpty()) {
        next = next.toBuilder().exclusiveStartKey(r.lastEvaluatedKey()).build();
      } else {
        finish(found);
      }
    }
  }

  // ------------------------------------------------------------------ writes

  /**
   * The update that makes an item hold exactly this counter: its value, kind and expiry set, a
   * limiter's attributes removed. An {@code UpdateItem} rather than a {@code PutItem}, so that the
   * operation id records on the item stay (see {@link Once}); the same one write unit.
   */
  static UpdateItemRequest replace(Table t, String key, Number value, long exp, String condition,
      Map<String, AttributeValue> v) {
    checkSize(key, t.items.counter(key, value, exp));
    StringBuilder set = new StringBuilder("SET #v = :val");
    StringBuilder remove = new StringBuilder(" REMOVE #r, #n, #o, #w, #m");
    v.put(":val", Items.encode(value));
    if (value instanceof Double) {
      set.append(", #f = :true");
      v.put(":true", Items.bool());
    } else {
      remove.append(", #f");
    }
    if (exp != 0) {
      set.append(", #e = :exp, #t = :ttl");
      v.put(":exp", n(exp));
      v.put(":ttl", Items.ttlSeconds(exp));
    } else {
      remove.append(", #e, #t");
    }
    return t.update(key, set.toString() + remove, condition, v, ReturnValue.NONE);
  }

  /** {@code put}: replaces the counter, unless the item holds live limiter state. */
  static final class Put extends Exchange<Void> {
    private final DynamoDbRequest request;

    Put(Table t, String key, Number value, long ttlNanos) {
      super(key, t.items.key(key), t.conflictTries);
      long now = t.now();
      long exp = Items.expiry(now, ttlNanos);
      // An expired limiter's attributes go with it.
      this.request = replace(t, key, value, exp, NOT_LIMITER, values(":now", n(now)));
    }

    @Override
    DynamoDbRequest request() {
      return request;
    }

    @Override
    void answer(DynamoDbResponse response) {
      finish(null);
    }

    @Override
    boolean needsItemOnConditionFailure() {
      return false;
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> current) {
      throw limiterHere(key);
    }
  }

  /** {@code add}: the counter, if the key is missing or expired: exactly one concurrent caller wins. */
  static final class Add extends Exchange<Boolean> {
    private final DynamoDbRequest request;
    private final long now;

    Add(Table t, String key, Number value, long ttlNanos) {
      super(key, t.items.key(key), t.conflictTries);
      this.now = t.now();
      this.request = replace(t, key, value, Items.expiry(now, ttlNanos),
          "(attribute_not_exists(#v) AND attribute_not_exists(#r)) OR #e <= :now", // expired: of either kind
          values(":now", n(now)));
    }

    @Override
    DynamoDbRequest request() {
      return request;
    }

    @Override
    void answer(DynamoDbResponse response) {
      finish(true);
    }

    /** The item that failed the condition says whether the name is a live limiter's. */
    @Override
    void conditionFailed(Map<String, AttributeValue> current) {
      checkNotLimiter(key, current, now);
      finish(false);
    }
  }

  /**
   * {@code DeleteItem} returning the old item: {@code pop} and {@code delete} in one atomic
   * step. An integer-only pop is conditional on the item not being a live floating counter, so
   * it leaves one in place.
   */
  static final class Delete extends Exchange<Number> {
    private final Table t;
    private final boolean integerOnly;
    private long now;
    private DynamoDbRequest next;
    private boolean wasLive;

    Delete(Table t, String key, boolean integerOnly) {
      super(key, t.items.key(key), t.conflictTries);
      this.t = t;
      this.integerOnly = integerOnly;
      send();
    }

    private void send() {
      now = t.now();
      String floating = integerOnly ? " AND (attribute_not_exists(#f) OR #e <= :now)" : "";
      // An item with live operation id records is not deleted: see conditionFailed.
      next = t.delete(key, NOT_LIMITER + floating + " AND (attribute_not_exists(#S) OR #S < :Snow)",
          values(":now", n(now), ":Snow", Once.nowBound(now)), ReturnValue.ALL_OLD, Map.of("#S", Once.MARKER));
    }

    /** The counter goes, the item and its live records stay (until DynamoDB's TTL deletion, after the last). */
    private void keepRecords(Map<String, AttributeValue> item) {
      String floating = integerOnly ? " AND (attribute_not_exists(#f) OR #e <= :now)" : "";
      next = t.update(key, "REMOVE #v, #f, #e, #r, #n, #o, #w, #m SET #t = :ttl",
          NOT_LIMITER + floating + " AND #S = :os",
          values(":now", n(now), ":os", item.get(Once.MARKER),
              ":ttl", Items.ttlSeconds(Math.max(now, Once.latestRecordExpiry(item, now)))),
          ReturnValue.ALL_OLD, Map.of("#S", Once.MARKER));
    }

    @Override
    DynamoDbRequest request() {
      return next;
    }

    @Override
    void answer(DynamoDbResponse response) {
      Map<String, AttributeValue> old;
      if (response instanceof DeleteItemResponse r) {
        old = r.hasAttributes() ? r.attributes() : null;
      } else {
        UpdateItemResponse r = (UpdateItemResponse) response;
        old = r.hasAttributes() ? r.attributes() : null;
      }
      Number value = old != null ? Items.liveValue(old, now) : null;
      wasLive = value != null;
      finish(value);
    }

    /** For {@code delete}: whether a live counter was deleted. */
    boolean wasLive() {
      return wasLive;
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> item) {
      checkNotLimiter(key, item, now);
      if (item != null && Items.isCounter(item) && !Items.expired(item, now)
          && item.containsKey(Items.FLOAT) && integerOnly) {
        throw new NotAnIntegerException(key);
      }
      conflict();
      if (Once.hasLiveRecords(item, now)) {
        keepRecords(item);
      } else {
        send();
      }
    }
  }

  /** {@code touch}: sets or removes the expiry of a live counter. */
  static final class Touch extends Exchange<Boolean> {
    private final DynamoDbRequest request;
    private final long now;

    Touch(Table t, String key, long ttlNanos) {
      super(key, t.items.key(key), t.conflictTries);
      this.now = t.now();
      String cond = "attribute_exists(#v) AND " + LIVE;
      if (ttlNanos == Store.NO_TTL) {
        request = t.update(key, "REMOVE #e, #t", cond, values(":now", n(now)), ReturnValue.NONE);
      } else {
        long exp = Items.expiry(now, ttlNanos);
        request = t.update(key, "SET #e = :exp, #t = :ttl", cond,
            values(":now", n(now), ":exp", n(exp), ":ttl", Items.ttlSeconds(exp)), ReturnValue.NONE);
      }
    }

    @Override
    DynamoDbRequest request() {
      return request;
    }

    @Override
    void answer(DynamoDbResponse response) {
      finish(true);
    }

    /** As for {@code add}: a live limiter's item refuses the name. */
    @Override
    void conditionFailed(Map<String, AttributeValue> current) {
      checkNotLimiter(key, current, now);
      finish(false);
    }
  }

  /** Refuses an item DynamoDB would refuse, before sending it. */
  static Map<String, AttributeValue> checkSize(String key, Map<String, AttributeValue> item) {
    int size = Items.sizeBound(item);
    if (size > Items.MAX_ITEM_BYTES) {
      throw new IllegalArgumentException("the item for '" + key + "' would take up to " + size
          + " bytes; a DynamoDB item holds at most 400 KB");
    }
    return item;
  }
}
