package dev.tally.dynamodb;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.BatchGetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.PutItemRequest;
import software.amazon.awssdk.services.dynamodb.model.ScanRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItemsRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItemsRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactionCanceledException;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

/**
 * Carries {@link Exchange}s out: sends each request, hands the answer back, and translates
 * failures. The blocking form loops on the calling thread; the asynchronous form chains the
 * same steps on {@link DynamoDbAsyncClient} futures.
 */
final class Runner {
  private final DynamoDbClient client;
  private final Supplier<DynamoDbAsyncClient> asyncClient; // null: no asynchronous form
  private final Options options;
  private final String table;
  /**
   * Whether the server returns the item that failed a condition. Learned from the first failure
   * that carries one; until then (and always, on servers that do not) a failure without an item
   * is followed by a consistent read of it.
   */
  private final AtomicBoolean returnsFailedItems;
  /** How often a retry-safe exchange re-sends after a lost answer; 0 when the SDK does it. */
  private final int lostAnswerRetries;

  Runner(DynamoDbClient client, Supplier<DynamoDbAsyncClient> asyncClient, Options options,
      AtomicBoolean returnsFailedItems, int retries) {
    this.lostAnswerRetries = options.retryLost() ? 0 : retries;
    this.client = client;
    this.asyncClient = asyncClient;
    this.options = options;
    this.table = options.table();
    this.returnsFailedItems = returnsFailedItems;
  }

  // ------------------------------------------------------------------ blocking

  /** Carries {@code x} out within {@code deadline}. */
  <T> T run(Exchange<T> x, Deadline deadline) {
    Deadline previous = deadline.enter();
    try {
      while (!x.done()) {
        deadline.pause(x.pauseNanos(), x.key);
        DynamoDbRequest request = x.request();
        x.operation = operationName(request);
        try {
          x.answer(send(bound(x, request, deadline)));
        } catch (ConditionalCheckFailedException e) {
          Map<String, AttributeValue> item;
          if (e.hasItem()) {
            returnsFailedItems.set(true);
            item = e.item();
          } else if (returnsFailedItems.get() || !x.needsItemOnConditionFailure()) {
            item = null;
          } else {
            item = item(client.getItem(deadline.bound(read(x.failedItemKey()), true, x.key)));
          }
          x.conditionFailed(item);
        } catch (TransactionCanceledException e) {
          x.canceled(e);
        } catch (DynamoDbException e) {
          if (Errors.numberRefused(e)) {
            x.numberRefused(e);
          } else if (!resend(x, e, deadline)) {
            throw e;
          }
        } catch (SdkClientException e) {
          if (!resend(x, e, deadline)) {
            throw e;
          }
        }
      }
      return x.result();
    } catch (RuntimeException e) {
      throw Errors.translate(e, x.key, options, x.operation);
    } finally {
      Deadline.release(previous);
    }
  }

  /**
   * {@code r} within the deadline; its attempts are cut short where a retry can follow (the
   * exchange re-sends lost answers itself, or the SDK retries every failure).
   */
  private DynamoDbRequest bound(Exchange<?> x, DynamoDbRequest r, Deadline deadline) {
    boolean retryable = options.retryLost() || (x.retrySafe() && lostAnswerRetries > 0);
    return deadline.bound(r, retryable, x.key);
  }

  /** {@code TransactWriteItemsRequest} → {@code TransactWriteItems}. */
  static String operationName(DynamoDbRequest r) {
    String name = r.getClass().getSimpleName();
    return name.endsWith("Request") ? name.substring(0, name.length() - "Request".length()) : name;
  }

  /**
   * Whether to send the same request again after {@code failure}, having paused. Not once the
   * deadline has come: the failure (a timeout, as a rule) is then the answer.
   */
  private boolean resend(Exchange<?> x, Throwable failure, Deadline deadline) {
    if (!x.retrySafe() || !Errors.lostAnswer(failure) || deadline.remainingNanos() <= 0
        || !x.anotherAttempt(lostAnswerRetries)) {
      return false;
    }
    deadline.pause(x.lostAnswerPauseNanos(), x.key);
    return true;
  }

  private DynamoDbResponse send(DynamoDbRequest r) {
    if (r instanceof UpdateItemRequest u) {
      return client.updateItem(u);
    } else if (r instanceof GetItemRequest g) {
      return client.getItem(g);
    } else if (r instanceof PutItemRequest p) {
      return client.putItem(p);
    } else if (r instanceof DeleteItemRequest d) {
      return client.deleteItem(d);
    } else if (r instanceof ScanRequest s) {
      return client.scan(s);
    } else if (r instanceof BatchGetItemRequest b) {
      return client.batchGetItem(b);
    } else if (r instanceof TransactGetItemsRequest t) {
      return client.transactGetItems(t);
    } else if (r instanceof TransactWriteItemsRequest t) {
      return client.transactWriteItems(t);
    }
    throw new IllegalArgumentException("no such request: " + r.getClass().getSimpleName());
  }

  GetItemRequest read(Map<String, AttributeValue> key) {
    return GetItemRequest.builder().tableName(table).key(key).consistentRead(true).build();
  }

  private static Map<String, AttributeValue> item(GetItemResponse r) {
    return r.hasItem() && !r.item().isEmpty() ? r.item() : null;
  }

  // ------------------------------------------------------------------ asynchronous

  /** Carries {@code x} out within {@code deadline}, on the asynchronous client's futures. */
  <T> CompletableFuture<T> runAsync(Exchange<T> x, Deadline deadline) {
    CompletableFuture<T> result = new CompletableFuture<>();
    step(x, deadline, result);
    return result;
  }

  private <T> void step(Exchange<T> x, Deadline deadline, CompletableFuture<T> result) {
    try {
      if (x.done()) {
        result.complete(x.result());
        return;
      }
      long pause = x.pauseNanos();
      if (pause > 0 && pause >= deadline.remainingNanos()) {
        throw deadline.expired(x.key);
      }
      // The client first: built on first use, which takes time the request's bound must not include.
      DynamoDbAsyncClient client = asyncClient.get();
      CompletableFuture<DynamoDbResponse> sent = pause > 0
          ? CompletableFuture.supplyAsync(() -> bound(x, named(x, x.request()), deadline),
              CompletableFuture.delayedExecutor(pause, TimeUnit.NANOSECONDS)).thenCompose(r -> sendAsync(client, r))
          : sendAsync(client, bound(x, named(x, x.request()), deadline));
      sent.whenComplete((response, failure) -> {
        if (failure == null) {
          try {
            x.answer(response);
            step(x, deadline, result);
          } catch (Throwable t) {
            result.completeExceptionally(Errors.translate(t, x.key, options, x.operation));
          }
          return;
        }
        onFailure(x, deadline, result, Errors.unwrap(failure));
      });
    } catch (Throwable t) {
      result.completeExceptionally(Errors.translate(t, x.key, options, x.operation));
    }
  }

  private <T> void onFailure(Exchange<T> x, Deadline deadline, CompletableFuture<T> result, Throwable failure) {
    try {
      if (failure instanceof ConditionalCheckFailedException e) {
        if (e.hasItem()) {
          returnsFailedItems.set(true);
          x.conditionFailed(e.item());
        } else if (returnsFailedItems.get() || !x.needsItemOnConditionFailure()) {
          x.conditionFailed(null);
        } else {
          asyncClient.get().getItem(deadline.bound(read(x.failedItemKey()), true, x.key)).whenComplete((r, f) -> {
            if (f != null) {
              result.completeExceptionally(Errors.translate(f, x.key, options, x.operation));
              return;
            }
            try {
              x.conditionFailed(item(r));
              step(x, deadline, result);
            } catch (Throwable t) {
              result.completeExceptionally(Errors.translate(t, x.key, options, x.operation));
            }
          });
          return;
        }
      } else if (failure instanceof TransactionCanceledException e) {
        x.canceled(e);
      } else if (failure instanceof DynamoDbException e && Errors.numberRefused(e)) {
        x.numberRefused(e);
      } else if (x.retrySafe() && Errors.lostAnswer(failure) && deadline.remainingNanos() > 0
          && x.anotherAttempt(lostAnswerRetries)) {
        long pause = x.lostAnswerPauseNanos();
        if (pause >= deadline.remainingNanos()) {
          throw deadline.expired(x.key);
        }
        CompletableFuture.delayedExecutor(pause, TimeUnit.NANOSECONDS).execute(() -> step(x, deadline, result));
        return;
      } else {
        result.completeExceptionally(Errors.translate(failure, x.key, options, x.operation));
        return;
      }
      step(x, deadline, result);
    } catch (Throwable t) {
      result.completeExceptionally(Errors.translate(t, x.key, options, x.operation));
    }
  }

  private static DynamoDbRequest named(Exchange<?> x, DynamoDbRequest r) {
    x.operation = operationName(r);
    return r;
  }

  @SuppressWarnings("unchecked")
  private static CompletableFuture<DynamoDbResponse> sendAsync(DynamoDbAsyncClient asyncClient, DynamoDbRequest r) {
    CompletableFuture<? extends DynamoDbResponse> f;
    if (r instanceof UpdateItemRequest u) {
      f = asyncClient.updateItem(u);
    } else if (r instanceof GetItemRequest g) {
      f = asyncClient.getItem(g);
    } else if (r instanceof PutItemRequest p) {
      f = asyncClient.putItem(p);
    } else if (r instanceof DeleteItemRequest d) {
      f = asyncClient.deleteItem(d);
    } else if (r instanceof ScanRequest s) {
      f = asyncClient.scan(s);
    } else if (r instanceof BatchGetItemRequest b) {
      f = asyncClient.batchGetItem(b);
    } else if (r instanceof TransactGetItemsRequest t) {
      f = asyncClient.transactGetItems(t);
    } else if (r instanceof TransactWriteItemsRequest t) {
      f = asyncClient.transactWriteItems(t);
    } else {
      throw new IllegalArgumentException("no such request: " + r.getClass().getSimpleName());
    }
    return (CompletableFuture<DynamoDbResponse>) f;
  }
}
