package dev.tally.dynamodb;

import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import java.time.Duration;
import java.util.List;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ResourceInUseException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;
import software.amazon.awssdk.services.dynamodb.model.TableDescription;
import software.amazon.awssdk.services.dynamodb.model.TableStatus;

/** Creating the table, and checking on opening that it exists, has the right key and is usable. */
final class Tables {
  private Tables() {}

  /** How long to wait for a table to become ACTIVE (DynamoDB takes seconds; local servers none). */
  static final Duration ACTIVE_WAIT = Duration.ofMinutes(2);
  private static final long POLL_MILLIS = 25;

  /** Creates the table if it is missing and waits until it is ACTIVE; returns whether it created it. */
  static boolean create(DynamoDbClient client, Options o) {
    boolean created;
    try {
      client.createTable(b -> b
          .tableName(o.table())
          .attributeDefinitions(AttributeDefinition.builder()
              .attributeName(o.keyAttribute()).attributeType(ScalarAttributeType.S).build())
          .keySchema(KeySchemaElement.builder().attributeName(o.keyAttribute()).keyType(KeyType.HASH).build())
          .billingMode(BillingMode.PAY_PER_REQUEST));
      created = true;
    } catch (ResourceInUseException e) {
      created = false; // it exists: check it below
    } catch (SdkException e) {
      throw Errors.translate(e, null, o);
    }
    awaitUsable(client, o);
    enableTtl(client, o);
    return created;
  }

  /** Turns on DynamoDB's TTL deletion on {@code _ttl}, where the server supports it. */
  private static void enableTtl(DynamoDbClient client, Options o) {
    try {
      client.updateTimeToLive(b -> b.tableName(o.table())
          .timeToLiveSpecification(s -> s.attributeName(Items.TTL).enabled(true)));
    } catch (DynamoDbException e) {
      // Already enabled ("TimeToLive is already enabled"), or a local server without TTL
      // (dynalite): expiry stays exact either way, since every read checks _exp.
      if (!Errors.unknownOperation(e) && !String.valueOf(e.getMessage()).contains("already enabled")) {
        throw Errors.translate(e, null, o);
      }
    } catch (SdkException e) {
      throw Errors.translate(e, null, o);
    }
  }

  /** Fails at once if the table is missing or keyed otherwise; waits while it is being created. */
  static void awaitUsable(DynamoDbClient client, Options o) {
    long deadline = System.nanoTime() + ACTIVE_WAIT.toNanos();
    for (;;) {
      TableDescription t;
      try {
        t = client.describeTable(b -> b.tableName(o.table())).table();
      } catch (ResourceNotFoundException e) {
        throw new StoreUnavailableException(Errors.missingTable(o), e);
      } catch (SdkException e) {
        throw Errors.translate(e, null, o);
      }
      checkKey(t, o);
      TableStatus status = t.tableStatus();
      if (status == TableStatus.ACTIVE || status == TableStatus.UPDATING) {
        return;
      }
      if (status != TableStatus.CREATING || System.nanoTime() - deadline > 0) {
        throw new StoreTimeoutException("DynamoDB table '" + o.table() + "' is " + status
            + ", not ACTIVE" + (status == TableStatus.CREATING ? " after " + ACTIVE_WAIT : ""), null);
      }
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StoreUnavailableException("interrupted while waiting for table '" + o.table() + "'", e);
      }
    }
  }

  private static void checkKey(TableDescription t, Options o) {
    List<KeySchemaElement> schema = t.keySchema();
    boolean ok = schema.size() == 1 && schema.get(0).attributeName().equals(o.keyAttribute());
    if (ok) {
      for (AttributeDefinition d : t.attributeDefinitions()) {
        if (d.attributeName().equals(o.keyAttribute()) && d.attributeType() != ScalarAttributeType.S) {
          ok = false;
        }
      }
    }
    if (!ok) {
      StringBuilder has = new StringBuilder();
      for (KeySchemaElement e : schema) {
        has.append(has.length() == 0 ? "" : ", ").append(e.attributeName()).append(' ').append(e.keyType());
      }
      throw new IllegalArgumentException("DynamoDB table '" + o.table() + "' is keyed by (" + has
          + "); Tally needs a single string partition key named '" + o.keyAttribute() + "'."
          + (schema.size() == 1 ? " Open it with key=" + schema.get(0).attributeName() + " in the URI" : ""));
    }
  }

  /** Deletes the table (for tests and tools). */
  static void delete(DynamoDbClient client, Options o) {
    try {
      client.deleteTable(b -> b.tableName(o.table()));
    } catch (ResourceNotFoundException e) {
      // already gone
    }
  }
}
