package dev.tally.dynamodb;

import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.OperationRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/**
 * One operation id on its way into the item it mutates.
 *
 * <h2>Where an id lives</h2>
 *
 * An id's record is an attribute of the item the operation changes, written by the same
 * conditional write as the change, so no lost answer or crash can separate the two:
 *
 * <pre>
 *   _op:ID  = S  "EXPIRY|FINGERPRINT|RESULT"   EXPIRY: 20 digits of epoch nanoseconds
 *   _or:ID  = N  the new value, for an increment (computed by the write itself)
 *   _ops    = S  "EXPIRY|RANDOM": changed by every write that adds or removes records
 * </pre>
 *
 * The write's condition is {@code attribute_not_exists(_op:ID) OR _op:ID < :now} (the record is
 * absent or expired; the zero-padded expiry makes string order time order), so of concurrent
 * calls with one id exactly one applies; the others fail the condition, and the item that failed
 * it (returned with {@code ReturnValuesOnConditionCheckFailure=ALL_OLD}) carries the record, whose
 * result they return. An increment cannot know its result before the write, so the write computes
 * it: {@code SET v = if_not_exists(v, :dflt) + :d, _or:ID = if_not_exists(v, :dflt) + :d}, both
 * right-hand sides read from the item before the write.
 *
 * <p>{@code _ops} tells a plain delete that live records are on the item (it then keeps them, and
 * removes only the counter) and lets a rewrite of the whole item (a transaction, a limiter) be
 * conditioned on the records being as read.
 *
 * <h2>Growth</h2>
 *
 * Expired records are removed by a later idempotent write on the same item: one such write in
 * {@link #SEE_ITEM_EVERY} sees the whole item (as do those whose condition failed), and the next
 * one removes up to {@link #PRUNE_PER_WRITE} expired records, each on condition that it is still
 * the record seen.
 * Writes that rewrite the whole item drop expired records for free.
 */
final class Once {
  static final String RECORD_PREFIX = "_op:";
  static final String RESULT_PREFIX = "_or:";
  static final String MARKER = "_ops";
  static final int PRUNE_PER_WRITE = 20;
  static final int SEE_ITEM_EVERY = 8;

  /** Marks a record whose result is in {@code _or:ID}. */
  private static final String COMPUTED = "*";

  final OperationId id;
  final Mutation mutation;
  final String key;
  final long now;
  final long expiresAt;
  final String recordAttr;
  final String resultAttr;

  Once(OperationId id, Mutation mutation, String key, long now, long retentionNanos) {
    this.id = id;
    this.mutation = mutation;
    this.key = key;
    this.now = now;
    this.expiresAt = retentionNanos > Long.MAX_VALUE - now ? Long.MAX_VALUE : now + retentionNanos;
    this.recordAttr = RECORD_PREFIX + id.value();
    this.resultAttr = RESULT_PREFIX + id.value();
  }

  static String pad(long nanos) {
    String s = Long.toString(Math.max(0, nanos));
    return "0".repeat(20 - s.length()) + s;
  }

  /** A string that sorts after the record text of every expiry up to {@code now}, and before later ones. */
  static AttributeValue nowBound(long now) {
    return AttributeValue.fromS(pad(now) + "}");
  }

  /** The record text for a result known before the write. */
  AttributeValue text(Object result) {
    return AttributeValue.fromS(pad(expiresAt) + "|" + OperationRecord.of(mutation, result).encode());
  }

  /** The record text for a result the write computes into {@link #resultAttr}. */
  AttributeValue computedText() {
    return AttributeValue.fromS(pad(expiresAt) + "|" + COMPUTED + OperationRecord.of(mutation, null).encode());
  }

  /** A new value of the {@code _ops} marker. */
  AttributeValue marker() {
    return AttributeValue.fromS(pad(expiresAt) + "|" + Long.toHexString(ThreadLocalRandom.current().nextLong()));
  }

  static boolean isRecordAttr(String name) {
    return name.startsWith(RECORD_PREFIX) || name.startsWith(RESULT_PREFIX) || name.equals(MARKER);
  }

  /** The expiry of a record or marker text. */
  static long expiryOf(AttributeValue text) {
    String s = text.s();
    if (s == null || s.length() < 21 || s.charAt(20) != '|') {
      throw new IllegalStateException("operation id record '" + text + "' was not written by this"
          + " version of Tally");
    }
    return Long.parseLong(s.substring(0, 20));
  }

  /** Whether the item holds live id records (its marker has not expired). */
  static boolean hasLiveRecords(Map<String, AttributeValue> item, long now) {
    AttributeValue m = item == null ? null : item.get(MARKER);
    return m != null && expiryOf(m) - now > 0;
  }

  /** The latest expiry of a live record on the item, or 0. */
  static long latestRecordExpiry(Map<String, AttributeValue> item, long now) {
    long latest = 0;
    if (item == null) {
      return 0;
    }
    for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
      if (e.getKey().startsWith(RECORD_PREFIX)) {
        long exp = expiryOf(e.getValue());
        if (exp - now > 0 && exp > latest) {
          latest = exp;
        }
      }
    }
    return latest;
  }

  /** The item's live records (and their results and the marker), to carry into a rewrite of it. */
  static Map<String, AttributeValue> liveRecords(Map<String, AttributeValue> item, long now) {
    Map<String, AttributeValue> out = new HashMap<>();
    if (item == null) {
      return out;
    }
    for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
      String name = e.getKey();
      if (name.startsWith(RECORD_PREFIX) && expiryOf(e.getValue()) - now > 0) {
        out.put(name, e.getValue());
        AttributeValue r = item.get(RESULT_PREFIX + name.substring(RECORD_PREFIX.length()));
        if (r != null) {
          out.put(RESULT_PREFIX + name.substring(RECORD_PREFIX.length()), r);
        }
      }
    }
    if (!out.isEmpty() && item.containsKey(MARKER)) {
      out.put(MARKER, item.get(MARKER));
    }
    return out;
  }

  /** Expired records on the item, by attribute name, with the text each had: what a later write removes. */
  static List<Map.Entry<String, AttributeValue>> expired(Map<String, AttributeValue> item, long now, String keep) {
    List<Map.Entry<String, AttributeValue>> out = new ArrayList<>();
    if (item == null) {
      return out;
    }
    for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
      if (e.getKey().startsWith(RECORD_PREFIX) && !e.getKey().equals(keep) && expiryOf(e.getValue()) - now <= 0) {
        out.add(Map.entry(e.getKey(), e.getValue()));
        if (out.size() == PRUNE_PER_WRITE) {
          break;
        }
      }
    }
    return out;
  }

  /** What a repeat finds on an item. */
  static final Object ABSENT = new Object();

  /**
   * The result recorded for this id on {@code item}: {@link #ABSENT} if there is no live record.
   *
   * @throws dev.tally.OperationIdConflictException if the id was first used for another operation
   */
  Object replay(Map<String, AttributeValue> item) {
    AttributeValue text = item == null ? null : item.get(recordAttr);
    if (text == null || expiryOf(text) - now <= 0) {
      return ABSENT;
    }
    String rest = text.s().substring(21);
    boolean computed = rest.startsWith(COMPUTED);
    OperationRecord record = OperationRecord.decode(computed ? rest.substring(1) : rest);
    Object result = record.replay(id, mutation);
    if (!computed) {
      return result;
    }
    AttributeValue v = item.get(resultAttr);
    if (v == null || v.n() == null) {
      throw new IllegalStateException("operation id '" + id + "' on '" + key + "' has a record without"
          + " its result; the item was not written by this version of Tally");
    }
    return Items.integer(v.n());
  }

  /** Whether the live record of this id on {@code item} holds a result the write computed. */
  boolean computed(Map<String, AttributeValue> item) {
    AttributeValue text = item == null ? null : item.get(recordAttr);
    return text != null && text.s().startsWith(COMPUTED, 21);
  }

  /** The condition that no live record of this id is on the item. */
  static final String ABSENT_CONDITION = "(attribute_not_exists(#I) OR #I < :Inow)";

  /**
   * {@code request} (an UpdateItem of the mutation) with this id's record written beside it, the
   * condition that the record is absent, and expired records removed.
   *
   * @param computed the expression of the result the write computes, or null
   * @param result the result known before the write, when {@code computed} is null
   * @param prune expired records to remove, with the text each must still have
   */
  UpdateItemRequest augment(UpdateItemRequest request, String computed, Object result,
      List<Map.Entry<String, AttributeValue>> prune) {
    Map<String, String> names = new HashMap<>(request.expressionAttributeNames());
    Map<String, AttributeValue> values = new HashMap<>();
    if (request.hasExpressionAttributeValues()) {
      values.putAll(request.expressionAttributeValues());
    }
    names.put("#I", recordAttr);
    names.put("#S", MARKER);
    values.put(":Inow", nowBound(now));
    values.put(":S", marker());
    StringBuilder set = new StringBuilder("SET #I = :I, #S = :S");
    if (computed != null) {
      names.put("#J", resultAttr);
      values.put(":I", computedText());
      set.append(", #J = ").append(computed);
    } else {
      values.put(":I", text(result));
    }
    String update = request.updateExpression();
    if (update.startsWith("SET ")) {
      update = set + ", " + update.substring(4);
    } else {
      update = set + " " + update;
    }
    StringBuilder condition = new StringBuilder(ABSENT_CONDITION);
    if (request.conditionExpression() != null) {
      condition.append(" AND (").append(request.conditionExpression()).append(')');
    }
    if (!prune.isEmpty()) {
      StringBuilder remove = new StringBuilder();
      for (int i = 0; i < prune.size(); i++) {
        String name = prune.get(i).getKey();
        String id = name.substring(RECORD_PREFIX.length());
        names.put("#P" + i, name);
        names.put("#Q" + i, RESULT_PREFIX + id);
        values.put(":P" + i, prune.get(i).getValue());
        remove.append(i == 0 ? "" : ", ").append("#P").append(i).append(", #Q").append(i);
        condition.append(" AND #P").append(i).append(" = :P").append(i);
      }
      update = update.contains(" REMOVE ") ? update + ", " + remove : update + " REMOVE " + remove;
    }
    ReturnValue returns = request.returnValues();
    if (returns == null || returns == ReturnValue.NONE || returns == ReturnValue.UPDATED_NEW
        || returns == ReturnValue.UNKNOWN_TO_SDK_VERSION) {
      // One write in SEE_ITEM_EVERY asks for the whole item, to learn which records have expired
      // (the next write removes up to PRUNE_PER_WRITE of them, so removal outpaces arrival); the
      // others only for what they changed, since an item with many ids is large.
      returns = ThreadLocalRandom.current().nextInt(SEE_ITEM_EVERY) == 0 ? ReturnValue.ALL_NEW : ReturnValue.UPDATED_NEW;
    }
    return request.toBuilder()
        .updateExpression(update)
        .conditionExpression(condition.toString())
        .expressionAttributeNames(names)
        .expressionAttributeValues(values)
        .returnValues(returns)
        .build();
  }

  /** Whether a failed condition was a pruned record that changed since it was seen. */
  static boolean pruneStale(Map<String, AttributeValue> item, List<Map.Entry<String, AttributeValue>> prune) {
    for (Map.Entry<String, AttributeValue> p : prune) {
      AttributeValue now = item == null ? null : item.get(p.getKey());
      if (!p.getValue().equals(now)) {
        return true;
      }
    }
    return false;
  }
}
