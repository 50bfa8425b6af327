package dev.tally.dynamodb;

import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.TallyException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;

/**
 * What DynamoDB's failures mean for Tally's callers, and which ones the SDK may retry.
 *
 * <p>Only failures that prove nothing was applied are retried: throttling (DynamoDB refuses
 * the request before doing anything) and a connection that could not be opened. A timeout or a
 * server error after the request was sent is ambiguous, since an {@code UpdateItem} that adds to
 * a counter is not idempotent: retrying it could count twice. Those surface as
 * {@link StoreTimeoutException} / {@link StoreUnavailableException}, which say that the
 * operation may have been applied, and the caller's failure policy decides.
 */
final class Errors {
  private Errors() {}

  /** The SDK retry predicate: true only for failures after which nothing was applied. */
  static boolean neverApplied(Throwable t) {
    if (t instanceof AwsServiceException e) {
      return e.isThrottlingException();
    }
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof ConnectException || c instanceof UnknownHostException
          || c instanceof NoRouteToHostException
          // Apache HttpClient's, an InterruptedIOException: the connection never opened
          || c.getClass().getSimpleName().equals("ConnectTimeoutException")) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a failure may have come after the request was applied: a 5xx answer, a timeout, a
   * connection lost after sending. Such a request is re-sent only when it carries an id that
   * recognises its own write ({@link Exchange#retrySafe()}).
   */
  static boolean lostAnswer(Throwable t) {
    if (t instanceof AwsServiceException e) {
      return e.statusCode() >= 500 && !e.isThrottlingException();
    }
    if (t instanceof ApiCallAttemptTimeoutException || t instanceof ApiCallTimeoutException) {
      return true; // the SDK aborts the request by interrupting its thread: no interrupt of ours
    }
    return t instanceof SdkClientException && !(t instanceof AbortedException)
        && !causedBy(t, InterruptedIOException.class) && !neverApplied(t);
  }

  /** Whether DynamoDB refused a number as out of range or too precise. */
  static boolean numberRefused(DynamoDbException e) {
    String m = e.awsErrorDetails() == null ? e.getMessage() : e.awsErrorDetails().errorMessage();
    return m != null && e.statusCode() == 400
        && (m.contains("Number overflow") || m.contains("Number underflow")
            || m.contains("significant digits"));
  }

  /** Whether the server does not implement an operation (dynalite and transactions). */
  static boolean unknownOperation(Throwable t) {
    if (t instanceof AwsServiceException e && e.awsErrorDetails() != null) {
      String code = e.awsErrorDetails().errorCode();
      return "UnknownOperationException".equals(code);
    }
    return false;
  }

  /** A failure of an operation on {@code key} (or on the table when null), as Tally reports it. */
  static RuntimeException translate(Throwable t, String key, Options options) {
    return translate(t, key, options, null);
  }

  /**
   * The same, for a failure of DynamoDB operation {@code operation} (e.g. TransactWriteItems;
   * null if unknown), which the message names.
   */
  static RuntimeException translate(Throwable t, String key, Options options, String operation) {
    t = unwrap(t);
    if (t instanceof TallyException || t instanceof IllegalArgumentException
        || t instanceof IllegalStateException || t instanceof UnsupportedOperationException) {
      return (RuntimeException) t;
    }
    String what = key == null ? options.describe() : "'" + key + "' in " + options.describe();
    if (t instanceof ResourceNotFoundException) {
      return new StoreUnavailableException(missingTable(options), t);
    }
    if (t instanceof SdkClientException && neverApplied(t)) {
      // With retryLost=true an earlier attempt may have been a lost answer: claim nothing then.
      return new StoreUnavailableException("could not reach DynamoDB for " + what + ": "
          + t.getMessage() + (options.retryLost() ? "" : "; nothing was applied"), t);
    }
    if (t instanceof ApiCallTimeoutException || t instanceof ApiCallAttemptTimeoutException
        || causedBy(t, SocketTimeoutException.class)) {
      return new StoreTimeoutException("DynamoDB did not answer in time for " + what + " (timeout "
          + options.timeout().toMillis() + " ms); the operation may or may not have been applied", t);
    }
    if (t instanceof AbortedException || causedBy(t, InterruptedIOException.class)) {
      return new StoreUnavailableException("the request for " + what + " was interrupted; it may"
          + " or may not have been applied", t);
    }
    if (unknownOperation(t)) {
      String said = ((AwsServiceException) t).awsErrorDetails().errorMessage();
      return new UnsupportedOperationException("the DynamoDB endpoint of " + options.describe()
          + " does not implement " + (operation != null ? operation : "this operation")
          + (said != null && !said.isBlank() ? " (" + said + ")" : "")
          + (operation != null && operation.startsWith("Transact") ? ", which transactions need" : "")
          + "; it needs DynamoDB itself or a server that implements it", t);
    }
    if (t instanceof AwsServiceException e) {
      if (e.isThrottlingException()) {
        return new StoreTimeoutException("DynamoDB throttled the requests for " + what + " (retried "
            + "up to the retries option); nothing was applied. Raise the table's capacity or use"
            + " on-demand billing", t);
      }
      if (e.statusCode() >= 500) {
        return new StoreUnavailableException("DynamoDB failed on " + what + " (" + e.statusCode()
            + "): " + message(e) + "; the operation may or may not have been applied", t);
      }
      if (e.awsErrorDetails() != null && "ValidationException".equals(e.awsErrorDetails().errorCode())
          && String.valueOf(message(e)).contains("Item size")) {
        // Nothing was written: an item holds at most 400 KB, and this one would have grown past it.
        return new TallyException("DynamoDB refused the write for " + what + ": the item would exceed"
            + " DynamoDB's 400 KB item limit (" + message(e) + "). Nothing was applied. An item keeps"
            + " the operation ids used on its key for the store's operation retention, about 100 bytes"
            + " each: use ids on this key less often, or shorten Tally.Builder.operationRetention", t);
      }
      if (e.awsErrorDetails() != null && "ValidationException".equals(e.awsErrorDetails().errorCode())) {
        // A request Tally should not have sent: not a failure of the store, so no policy applies.
        return new TallyException("DynamoDB refused the request for " + what + ": " + message(e), t);
      }
      return new StoreUnavailableException("DynamoDB refused the request for " + what + " ("
          + e.statusCode() + "): " + message(e), t);
    }
    if (t instanceof SdkClientException && lostAnswer(t)) {
      return new StoreUnavailableException("the answer from DynamoDB for " + what + " was lost ("
          + t.getMessage() + "); the operation may or may not have been applied", t);
    }
    if (t instanceof SdkClientException || t instanceof SdkException) {
      return new StoreUnavailableException("could not reach DynamoDB for " + what + ": "
          + t.getMessage(), t);
    }
    if (t instanceof RuntimeException r) {
      return r;
    }
    return new StoreException("unexpected failure on " + what + ": " + t, t);
  }

  static String missingTable(Options options) {
    return "DynamoDB table '" + options.table() + "' does not exist" + (options.endpoint() != null
        ? " at " + options.endpoint() : "") + ". Create it once with"
        + " dev.tally.dynamodb.DynamoDbTables.create(\"<this store's URI>\"), or with the"
        + " CloudFormation in docs/dynamodb.md: partition key '" + options.keyAttribute()
        + "' of type S, PAY_PER_REQUEST, TTL on _ttl";
  }

  private static String message(AwsServiceException e) {
    return e.awsErrorDetails() != null && e.awsErrorDetails().errorMessage() != null
        ? e.awsErrorDetails().errorMessage() : e.getMessage();
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
