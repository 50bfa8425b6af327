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
          || c instanceof NoRouteToHostException) {
        return true;
      }
    }
    return false;
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
    t = unwrap(t);
    if (t instanceof TallyException || t instanceof IllegalArgumentException
        || t instanceof IllegalStateException || t instanceof UnsupportedOperationException) {
      return (RuntimeException) t;
    }
    String what = key == null ? options.describe() : "'" + key + "' in " + options.describe();
    if (t instanceof ResourceNotFoundException) {
      return new StoreUnavailableException(missingTable(options), t);
    }
    if (t instanceof ApiCallTimeoutException || t instanceof ApiCallAttemptTimeoutException
        || causedBy(t, SocketTimeoutException.class)) {
      return new StoreTimeoutException("DynamoDB did not answer in time for " + what
          + "; the operation may or may not have been applied", t);
    }
    if (t instanceof AbortedException || causedBy(t, InterruptedIOException.class)) {
      return new StoreUnavailableException("the request for " + what + " was interrupted; it may"
          + " or may not have been applied", t);
    }
    if (unknownOperation(t)) {
      return new UnsupportedOperationException("the DynamoDB endpoint of " + options.describe()
          + " does not implement this operation (" + ((AwsServiceException) t).awsErrorDetails().errorMessage()
          + "); it needs DynamoDB itself or a server that implements it", t);
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
      if (e.awsErrorDetails() != null && "ValidationException".equals(e.awsErrorDetails().errorCode())) {
        // A request Tally should not have sent: not a failure of the store, so no policy applies.
        return new TallyException("DynamoDB refused the request for " + what + ": " + message(e), t);
      }
      return new StoreUnavailableException("DynamoDB refused the request for " + what + " ("
          + e.statusCode() + "): " + message(e), t);
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
