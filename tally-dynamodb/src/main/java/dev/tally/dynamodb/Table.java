package dev.tally.dynamodb;

import dev.tally.TimeSource;
import java.util.HashMap;
import java.util.Map;
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

  GetItemRequest get(String key) {
    return GetItemRequest.builder().tableName(name).key(items.key(key)).consistentRead(true).build();
  }

  /** An UpdateItem; {@code values} may be null when the expressions use none. */
  UpdateItemRequest update(String key, String update, String condition, Map<String, AttributeValue> values,
      ReturnValue returnValues) {
    UpdateItemRequest.Builder b = UpdateItemRequest.builder()
        .tableName(name)
        .key(items.key(key))
        .updateExpression(update)
        .expressionAttributeNames(items.names(update, condition))
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
    PutItemRequest.Builder b = PutItemRequest.builder()
        .tableName(name)
        .item(item)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD);
    if (condition != null) {
      b.conditionExpression(condition).expressionAttributeNames(items.names(condition));
    }
    if (values != null && !values.isEmpty()) {
      b.expressionAttributeValues(values);
    }
    return b.build();
  }

  DeleteItemRequest delete(String key, String condition, Map<String, AttributeValue> values,
      ReturnValue returnValues) {
    DeleteItemRequest.Builder b = DeleteItemRequest.builder()
        .tableName(name)
        .key(items.key(key))
        .returnValues(returnValues)
        .returnValuesOnConditionCheckFailure(ReturnValuesOnConditionCheckFailure.ALL_OLD);
    if (condition != null) {
      b.conditionExpression(condition).expressionAttributeNames(items.names(condition));
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
