package dev.tally.dynamodb;

import static dev.tally.dynamodb.Items.n;
import static dev.tally.dynamodb.Table.values;

import dev.tally.OperationIdConflictException;
import dev.tally.StoreException;
import dev.tally.TallyException;
import dev.tally.WrongKindException;
import dev.tally.spi.CounterMath;
import dev.tally.spi.Mutation;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;

/**
 * The exchanges only operations with an id need: the claim of the id in the table's id space,
 * and the counter operations other than {@code incr} applied as a read and a conditional write.
 */
final class OnceExchanges {
  private OnceExchanges() {}

  /** Keys of claim items: no key a user writes starts with NUL and this word (documented as reserved). */
  static final String CLAIM_PREFIX = "\u0000tally-op\u0000";
  static final String CLAIM_FINGERPRINT = "_cf";
  static final String CLAIM_EXPIRY = "_ce";
  static final String CLAIM_KEY = "_ck";

  /** The key of {@code once}'s claim item. */
  private static String claimKey(Once once) {
    return CLAIM_PREFIX + once.id.value();
  }

  /** What a claim holds to tell its own operation from another that reuses the id. */
  private static AttributeValue claimFingerprint(Once once) {
    return AttributeValue.fromS(Long.toHexString(once.mutation.fingerprint()));
  }

  /**
   * Claims an id for one operation, so that the same id on another key (or with other arguments)
   * is refused before anything is applied: ids share one space per store, but a conditional write
   * sees one item only. The claim is a small item of its own, {@code NUL "tally-op" NUL id}, put on
   * condition that it is absent, expired, or already the claim of this very operation (a retry).
   * It does not make the operation apply once (the record beside the mutation does that); it only
   * stops a different operation from reusing the id. DynamoDB's TTL deletion removes it.
   */
  static final class Claim extends Exchange<Void> {
    private final Once once;
    private final DynamoDbRequest request;
    private final String fingerprint;

    Claim(Table t, Once once) {
      super(once.key, t.items.key(claimKey(once)), t.conflictTries);
      this.once = once;
      this.fingerprint = claimFingerprint(once).s();
      Map<String, AttributeValue> item = new HashMap<>();
      item.put(t.items.keyAttribute, AttributeValue.fromS(claimKey(once)));
      item.put(CLAIM_FINGERPRINT, claimFingerprint(once));
      item.put(CLAIM_EXPIRY, n(once.expiresAt));
      item.put(CLAIM_KEY, AttributeValue.fromS(once.key));
      item.put(Items.TTL, Items.ttlSeconds(once.expiresAt));
      this.request = t.put(item, "attribute_not_exists(#k) OR #E <= :now OR #C = :fp",
          values(":now", n(once.now), ":fp", AttributeValue.fromS(fingerprint)),
          Map.of("#C", CLAIM_FINGERPRINT, "#E", CLAIM_EXPIRY));
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
    void conditionFailed(Map<String, AttributeValue> item) {
      if (item != null && !fingerprint.equals(item.get(CLAIM_FINGERPRINT).s())
          && Items.longAttr(item, CLAIM_EXPIRY, 0) - once.now > 0) {
        throw new OperationIdConflictException(once.id.value(), once.key);
      }
      conflict(); // it expired or vanished meanwhile: claim again
    }

    @Override
    boolean retrySafe() {
      return true;
    }
  }

  /**
   * Gives back the claim of an operation that was refused before anything was applied (a key
   * that does not exist, a name of the other kind, an overflow): such a call records nothing
   * (see {@link dev.tally.spi.OperationId}), so its id must be as free as one never used, for
   * any operation. Deleted only while it is still this operation's claim.
   */
  static final class Release extends Exchange<Void> {
    private final DynamoDbRequest request;

    Release(Table t, Once once) {
      super(once.key, t.items.key(claimKey(once)), t.conflictTries);
      this.request = t.delete(claimKey(once), "#C = :fp", values(":fp", claimFingerprint(once)),
          ReturnValue.NONE, Map.of("#C", CLAIM_FINGERPRINT));
    }

    /** Whether {@code failure} refused the operation before it applied anything. */
    static boolean appliedNothing(Throwable failure) {
      return (failure instanceof TallyException && !(failure instanceof StoreException))
          || failure instanceof IllegalArgumentException || failure instanceof IllegalStateException;
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
    void conditionFailed(Map<String, AttributeValue> item) {
      finish(null); // gone, or the claim of another operation now: nothing of ours to give back
    }

    @Override
    boolean needsItemOnConditionFailure() {
      return false;
    }

    @Override
    boolean retrySafe() {
      return true;
    }
  }

  /**
   * {@code incrDouble}, {@code put}, {@code add}, {@code pop}, {@code delete} and {@code touch}
   * with an id: a consistent read, the operation computed here, and one {@code UpdateItem} that
   * writes its outcome and the id's record on condition that the item is still as read (value,
   * expiry, kind, and the id records through their marker). A failed condition carries the item:
   * a record of the id there is the answer; otherwise the operation is computed again from it.
   * Two requests, since these results (a popped value, whether an add won) are not known before
   * the write and DynamoDB cannot compute them into the record; the hot operation, {@code incr},
   * is one request ({@link CounterExchanges.Incr}).
   */
  static final class Cas extends Exchange<Object> {
    private final Table t;
    private final Once once;
    private boolean reading = true;
    private DynamoDbRequest next;
    private Object pending;

    Cas(Table t, Once once) {
      super(once.key, t.items.key(once.key), t.conflictTries);
      this.t = t;
      this.once = once;
      this.next = t.get(once.key);
    }

    @Override
    DynamoDbRequest request() {
      return next;
    }

    @Override
    void answer(DynamoDbResponse response) {
      if (reading) {
        GetItemResponse r = (GetItemResponse) response;
        plan(r.hasItem() && !r.item().isEmpty() ? r.item() : null);
      } else {
        finish(pending);
      }
    }

    @Override
    void conditionFailed(Map<String, AttributeValue> item) {
      conflict();
      plan(item);
    }

    @Override
    boolean retrySafe() {
      return true;
    }

    private void plan(Map<String, AttributeValue> item) {
      Object replayed = once.replay(item);
      if (replayed != Once.ABSENT) {
        finish(replayed);
        return;
      }
      long now = once.now;
      if (item != null && Items.isLimiter(item) && !Items.expired(item, now)) {
        throw new WrongKindException(key, WrongKindException.Kind.LIMITER);
      }
      if (item != null && !Items.isCounter(item) && !Items.isLimiter(item) && !Items.recordsOnly(item)) {
        throw new IllegalStateException("the item of '" + key + "' holds neither a counter nor"
            + " limiter state; it was not written by Tally");
      }
      Number cur = Items.liveValue(item, now);
      long curExp = cur == null ? 0 : Items.expiresAt(item);
      Number value = cur; // the counter after the operation; null: none
      long exp = curExp;
      Object result;
      Mutation m = once.mutation;
      if (m instanceof Mutation.IncrDouble d) {
        double sum = CounterMath.add(key, cur == null ? d.dflt() : cur.doubleValue(), d.delta());
        value = sum;
        result = sum;
      } else if (m instanceof Mutation.Put p) {
        value = p.value();
        exp = Items.expiry(now, p.ttlNanos());
        result = null;
      } else if (m instanceof Mutation.Add a) {
        result = cur == null;
        if (cur == null) {
          value = a.value();
          exp = Items.expiry(now, a.ttlNanos());
        }
      } else if (m instanceof Mutation.Pop p) {
        if (cur instanceof Double && p.integerOnly()) {
          throw CounterMath.notAnInteger(key);
        }
        result = cur;
        value = null;
      } else if (m instanceof Mutation.Delete) {
        result = cur != null;
        value = null;
      } else if (m instanceof Mutation.Touch tt) {
        result = cur != null;
        if (cur != null) {
          exp = Items.expiry(now, tt.ttlNanos());
        }
      } else {
        throw new IllegalArgumentException("no conditional form for " + m.getClass().getSimpleName());
      }
      if (value == null) {
        exp = 0;
      }

      Map<String, AttributeValue> v = values(":I", once.text(result), ":S", once.marker(),
          ":Inow", Once.nowBound(now));
      Map<String, String> names = new HashMap<>(Map.of("#I", once.recordAttr, "#S", Once.MARKER));
      List<String> set = new ArrayList<>(List.of("#I = :I", "#S = :S"));
      List<String> remove = new ArrayList<>();
      if (value != null) {
        set.add("#v = :v");
        v.put(":v", Items.encode(value));
        if (value instanceof Double) {
          set.add("#f = :true");
          v.put(":true", Items.bool());
        } else {
          remove.add("#f");
        }
        if (exp != 0) {
          set.add("#e = :exp");
          v.put(":exp", n(exp));
        } else {
          remove.add("#e");
        }
      } else {
        remove.addAll(List.of("#v", "#f", "#e"));
      }
      if (item != null && item.containsKey(Items.REC)) { // an expired limiter's state goes
        remove.addAll(List.of("#r", "#n", "#o", "#w", "#m"));
      }
      // DynamoDB's TTL deletion may remove the item once the counter and every live record expired.
      long records = Math.max(once.expiresAt, Once.latestRecordExpiry(item, now));
      if (value != null && exp == 0) {
        remove.add("#t");
      } else {
        set.add("#t = :ttl");
        v.put(":ttl", Items.ttlSeconds(Math.max(records, exp)));
      }
      List<Map.Entry<String, AttributeValue>> prune = Once.expired(item, now, once.recordAttr);
      for (int i = 0; i < prune.size(); i++) {
        String id = prune.get(i).getKey().substring(Once.RECORD_PREFIX.length());
        names.put("#P" + i, prune.get(i).getKey());
        names.put("#Q" + i, Once.RESULT_PREFIX + id);
        remove.add("#P" + i);
        remove.add("#Q" + i);
      }
      String update = "SET " + String.join(", ", set) + (remove.isEmpty() ? "" : " REMOVE " + String.join(", ", remove));
      String condition = Once.ABSENT_CONDITION + " AND " + asRead(item, v);
      pending = result;
      reading = false;
      next = t.update(key, update, condition, v, ReturnValue.NONE, names);
    }
  }

  /** A condition that the item is exactly as read: value, expiry, kind, limiter version and id records. */
  static String asRead(Map<String, AttributeValue> item, Map<String, AttributeValue> values) {
    if (item == null) {
      return "attribute_not_exists(#k)";
    }
    List<String> c = new ArrayList<>();
    same(item, Items.VALUE, "#v", ":ov", c, values);
    same(item, Items.EXP, "#e", ":oe", c, values);
    c.add(item.containsKey(Items.FLOAT) ? "attribute_exists(#f)" : "attribute_not_exists(#f)");
    if (item.containsKey(Items.REC)) {
      same(item, Items.WRITER, "#w", ":ow", c, values);
    } else {
      c.add("attribute_not_exists(#r)");
    }
    same(item, Once.MARKER, "#S", ":os", c, values);
    return "(" + String.join(" AND ", c) + ")";
  }

  private static void same(Map<String, AttributeValue> item, String attr, String alias, String placeholder,
      List<String> conditions, Map<String, AttributeValue> values) {
    AttributeValue old = item.get(attr);
    if (old == null) {
      conditions.add("attribute_not_exists(" + alias + ")");
    } else {
      conditions.add(alias + " = " + placeholder);
      values.put(placeholder, old);
    }
  }
}
