package dev.tally.dynamodb;

import dev.tally.StoreTimeoutException;
import java.util.Map;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbResponse;
import software.amazon.awssdk.services.dynamodb.model.CancellationReason;
import software.amazon.awssdk.services.dynamodb.model.TransactionCanceledException;

/**
 * One store operation as a short conversation with DynamoDB: each step is one request, and the
 * answer to it either gives the result or decides the next request.
 *
 * <p>Writing operations this way, rather than as blocking code, lets one implementation serve
 * both the blocking client and the asynchronous one ({@link Runner}), and makes the number of
 * requests each operation costs plain to see. Almost every operation is one request; the rare
 * second one follows a failed condition, and the item that failed it tells what to send next
 * (DynamoDB returns it with {@code ReturnValuesOnConditionCheckFailure=ALL_OLD}; servers that do
 * not, get a consistent {@code GetItem} from the runner instead).
 *
 * <p>Conversations are bounded: each conflicting write counts against the store's
 * {@code conflictTries}, after which the operation gives up with a {@link StoreTimeoutException}.
 * An exchange is used by one thread at a time.
 */
abstract class Exchange<T> {
  final String key;
  final Map<String, AttributeValue> itemKey;
  private final int conflictTries;
  private int conflicts;
  private int lostAnswers;
  /** The DynamoDB operation last sent, e.g. TransactWriteItems, for messages. */
  String operation;
  private boolean done;
  private T result;

  /**
   * @param key the key the operation is about, for messages
   * @param itemKey the primary key conditions are evaluated on; null for multi-item operations
   */
  Exchange(String key, Map<String, AttributeValue> itemKey, int conflictTries) {
    this.key = key;
    this.itemKey = itemKey;
    this.conflictTries = conflictTries;
  }

  /** The request to send next; called while not {@link #done()}. */
  abstract DynamoDbRequest request();

  /** The response to {@link #request()}: finish, or prepare the next request. */
  abstract void answer(DynamoDbResponse response);

  /**
   * The condition of {@link #request()} failed on {@code current}, the item as it was (null when
   * there is none): finish, or prepare the next request.
   */
  void conditionFailed(Map<String, AttributeValue> current) {
    throw new IllegalStateException(getClass().getSimpleName() + " sent no condition");
  }

  /** The key of the item a failed condition was evaluated on, to read it when the server did not return it. */
  Map<String, AttributeValue> failedItemKey() {
    return itemKey;
  }

  /** Whether {@link #conditionFailed} needs the item, fetched if the server did not return it. */
  boolean needsItemOnConditionFailure() {
    return true;
  }

  /** A transaction was canceled. */
  void canceled(TransactionCanceledException e) {
    throw e;
  }

  /**
   * DynamoDB refused a number the request computed (outside its range or 38 digits). Only
   * floating increments compute numbers that can be refused; they fall back to Java arithmetic.
   */
  void numberRefused(DynamoDbException e) {
    throw e;
  }

  /**
   * Whether sending {@link #request()} again after its answer was lost is safe: it carries an id
   * (an operation id's record, a limiter's write id, a transaction's client token) by which a
   * write that did apply is recognised. The runner retries lost answers of these itself.
   */
  boolean retrySafe() {
    return false;
  }

  /** Counts a lost answer; whether another attempt is allowed, of {@code max}. */
  final boolean anotherAttempt(int max) {
    return ++lostAnswers <= max;
  }

  /** The pause before re-sending after {@code lostAnswers} lost answers: full jitter, 25 ms doubling to 1 s. */
  final long lostAnswerPauseNanos() {
    long ceiling = Math.min(1_000_000_000L, 25_000_000L << Math.min(lostAnswers - 1, 6));
    return java.util.concurrent.ThreadLocalRandom.current().nextLong(ceiling);
  }

  /** How long to wait before sending the next request (backoff after conflicts). */
  long pauseNanos() {
    return 0;
  }

  final boolean done() {
    return done;
  }

  final T result() {
    return result;
  }

  final void finish(T value) {
    this.result = value;
    this.done = true;
  }

  /** Counts a conflicting write; gives up when there have been too many. */
  final int conflict() {
    if (++conflicts >= conflictTries) {
      throw new StoreTimeoutException("gave up on '" + key + "' after " + conflicts
          + " conflicting writes: other clients kept changing it. Nothing was applied by the last"
          + " attempt; raise conflictTries in the store URI or spread the load over more keys", null);
    }
    return conflicts;
  }

  final int conflicts() {
    return conflicts;
  }

  /**
   * Counts a transaction canceled by conflicts (a condition that no longer held, or another
   * transaction on an item) as one conflicting write; rethrows any other cancellation.
   */
  final void conflictOrRethrow(TransactionCanceledException e) {
    boolean conflicted = false;
    if (e.hasCancellationReasons()) {
      for (CancellationReason r : e.cancellationReasons()) {
        String code = r.code();
        if ("ConditionalCheckFailed".equals(code) || "TransactionConflict".equals(code)) {
          conflicted = true;
        } else if (code != null && !"None".equals(code)) {
          throw e;
        }
      }
    }
    if (!conflicted) {
      throw e;
    }
    conflict();
  }

  /** The pause after conflicting writes: full jitter, 1 ms doubling to 16 ms; none before any. */
  final long conflictPauseNanos() {
    int c = conflicts;
    return c == 0 ? 0 : java.util.concurrent.ThreadLocalRandom.current().nextLong(1_000_000L << Math.min(c, 4));
  }
}
