package dev.tally.dynamodb;

import dev.tally.TimeSource;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.PutItemRequest;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;
import software.amazon.awssdk.services.dynamodb.model.ReturnValuesOnConditionCheckFailure;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/**
 * What every exchange needs: the table, its item layout, the clock, and builders for the
 * requests it sends, which all ask for the failed item on a condition failure.
 */
final class Table {
  final String name;
  final Items items;
  final TimeSource clock;
  final int conflictTries;

  Table(String name, Items items, TimeSource clock, int conflictTries) {
    this.name = name;
    this.items = items;
    this.clock = clock;
    this.conflictTries = conflictTries;
  }

  long now() {
    return clock.nanos();
  }

  /**
   * Expired operation id records seen on each key's item, which the next idempotent write on it
   * removes (see {@link Once}). Bounded: forgotten wholesale past {@link #MAX_PRUNE_KEYS} keys.
   */
  private final ConcurrentHashMap<String, List<Map.Entry<String, AttributeValue>>> expired = new ConcurrentHashMap<>();
  static final int MAX_PRUNE_KEYS = 10_000;

  List<Map.Entry<String, AttributeValue>> expiredRecords(String key) {
    List<Map.Entry<String, AttributeValue>> e = expired.remove(key);
    return e == null ? List.of() : e;
  }

  void rememberExpired(String key, Map<String, AttributeValue> item, long now, String keep) {
    List<Map.Entry<String, AttributeValue>> e = Once.expired(item, now, keep);
    if (e.isEmpty()) {
      expired.remove(key);
      return;
    }
    if (expired.size() >= MAX_PRUNE_KEYS) {
      expired.clear();
    }
    expired.put(key, e);
  }

  GetItemRequest get(String key) {
    return GetItemRequest.builder().tableName(name).key(items.key(key)).consistentRead(true).build();
  }

  /** An UpdateItem; {@code values} may be null when the expressions use none. */
  UpdateItemRequest update(String key, String update, String condition, Map<String, AttributeValue> values,
      ReturnValue returnValues) {
    return update(key, update, condition, values, returnValues, Map.of());
  }

  UpdateItemRequest update(String key, String update, String condition, Map<String, AttributeValue> values,
      ReturnValue returnValues, Map<String, String> extraNames) {
    Map<String, String> names = new HashMap<>(items.names(update, condition));
    names.putAll(extraNames);
    UpdateItemRequest.Builder b = UpdateItemRequest.builder()
        .tableName(name)
        .key(items.key(key))
        .updateExpression(update)
        .expressionAttributeNames(names)
        .returnValues(returnValues)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD);
    if (condition != null) {
      b.conditionExpression(condition);
    }
    if (values != null && !values.isEmpty()) {
      b.expressionAttributeValues(values);
    }
    return b.build();
  }

  PutItemRequest put(Map<String, AttributeValue> item, String condition, Map<String, AttributeValue> values) {
    return put(item, condition, values, Map.of());
  }

  /** A PutItem whose condition also uses the aliases in {@code extraNames} (upper-case ones). */
  PutItemRequest put(Map<String, AttributeValue> item, String condition, Map<String, AttributeValue> values,
      Map<String, String> extraNames) {
    PutItemRequest.Builder b = PutItemRequest.builder()
        .tableName(name)
        .item(item)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD);
    if (condition != null) {
      Map<String, String> names = new HashMap<>(items.names(condition));
      names.putAll(extraNames);
      b.conditionExpression(condition).expressionAttributeNames(names);
    }
    if (values != null && !values.isEmpty()) {
      b.expressionAttributeValues(values);
    }
    return b.build();
  }

  DeleteItemRequest delete(String key, String condition, Map<String, AttributeValue> values,
      ReturnValue returnValues) {
    return delete(key, condition, values, returnValues, Map.of());
  }

  DeleteItemRequest delete(String key, String condition, Map<String, AttributeValue> values,
      ReturnValue returnValues, Map<String, String> extraNames) {
    DeleteItemRequest.Builder b = DeleteItemRequest.builder()
        .tableName(name)
        .key(items.key(key))
        .returnValues(returnValues)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD);
    if (condition != null) {
      Map<String, String> names = new HashMap<>(items.names(condition));
      names.putAll(extraNames);
      b.conditionExpression(condition).expressionAttributeNames(names);
    }
    if (values != null && !values.isEmpty()) {
      b.expressionAttributeValues(values);
    }
    return b.build();
  }

  /** A mutable map of expression values, e.g. {@code values(":now", n(now))}. */
  static Map<String, AttributeValue> values(Object... pairs) {
    Map<String, AttributeValue> m = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      m.put((String) pairs[i], (AttributeValue) pairs[i + 1]);
    }
    return m;
  }
}
