package dev.tally.server.app;

import dev.tally.BucketFullException;
import dev.tally.CounterOverflowException;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.OperationIdConflictException;
import dev.tally.ReservationGoneException;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.TallyException;
import dev.tally.jdbc.FlushBusyException;

/**
 * Why an operation did not succeed, with the HTTP status and the command-line exit code that
 * say so. One table for both front ends, so a script and an HTTP client read the same outcome.
 * {@link #NO_ROUTE} is HTTP's alone, {@link #FLUSH_BUSY} the command line's (HTTP has no flush).
 */
public enum Problem {
  DENIED(429, 1, dev.tally.http.Problem.QUOTA_EXCEEDED_TYPE, dev.tally.http.Problem.QUOTA_EXCEEDED_TITLE),
  BAD_REQUEST(400, 2, "Bad Request"),
  UNAUTHORIZED(401, 2, "Unauthorized"),
  FORBIDDEN(403, 2, "Forbidden"),
  METHOD_NOT_ALLOWED(405, 2, "Method Not Allowed"),
  TIMEOUT(408, 2, "Request Timeout"),
  TOO_LARGE(413, 2, "Content Too Large"),
  URI_TOO_LONG(414, 2, "URI Too Long"),
  UNSUPPORTED_MEDIA_TYPE(415, 2, "Unsupported Media Type"),
  UNPROCESSABLE(422, 2, "Unprocessable Content"),
  HEADERS_TOO_LARGE(431, 2, "Request Header Fields Too Large"),
  UNSUPPORTED(501, 2, "Not Implemented"),
  NOT_FOUND(404, 3, "Not Found"),
  NO_ROUTE(404, 2, "Not Found"),
  LEASE_GONE(410, 3, "Gone"),
  RESERVATION_GONE(410, 3, "Gone"),
  STORE_UNAVAILABLE(503, 4, "Service Unavailable"),
  STORE_TIMEOUT(504, 4, "Gateway Timeout"),
  SHUTTING_DOWN(503, 4, "Service Unavailable"),
  CONFLICT(409, 5, "Conflict"),
  FLUSH_BUSY(409, 6, "Conflict"),
  INTERNAL(500, 70, "Internal Server Error");

  private final int status;
  private final int exitCode;
  private final String type;
  private final String title;

  Problem(int status, int exitCode, String title) {
    this(status, exitCode, "about:blank", title);
  }

  Problem(int status, int exitCode, String type, String title) {
    this.status = status;
    this.exitCode = exitCode;
    this.type = type;
    this.title = title;
  }

  /**
   * The RFC 9457 {@code type}: {@code about:blank} (the status says what happened, the
   * {@code error} member which of Tally's outcomes), or the quota-exceeded type on 429.
   */
  public String type() {
    return type;
  }

  /** The RFC 9457 {@code title}: the status phrase, or the quota-exceeded type's title. */
  public String title() {
    return title;
  }

  public int status() {
    return status;
  }

  public int exitCode() {
    return exitCode;
  }

  /** The {@code error} field of a JSON error body, e.g. {@code not_found}. */
  public String code() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  /** What an exception thrown by Tally (or by input checks) means for the caller. */
  public static Problem of(Throwable e) {
    return e instanceof RequestException b ? b.problem()
        // the Idempotency-Key draft: a key reused for another request
        : e instanceof OperationIdConflictException ? UNPROCESSABLE
        : e instanceof IllegalArgumentException ? BAD_REQUEST
        : e instanceof KeyNotFoundException ? NOT_FOUND
        : e instanceof ReservationGoneException ? RESERVATION_GONE
        : e instanceof CounterOverflowException || e instanceof NotAnIntegerException ? CONFLICT
        // not a conflict in the data: the same flush, run again later, succeeds
        : e instanceof FlushBusyException ? FLUSH_BUSY
        : e instanceof BucketFullException ? DENIED
        : e instanceof StoreTimeoutException ? STORE_TIMEOUT
        : e instanceof StoreException ? STORE_UNAVAILABLE
        : e instanceof UnsupportedOperationException ? UNSUPPORTED
        : e instanceof TallyException ? CONFLICT
        : INTERNAL;
  }
}
