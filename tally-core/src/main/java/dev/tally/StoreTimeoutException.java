package dev.tally;

/** The store did not answer within the configured timeout; the operation may have applied. */
public class StoreTimeoutException extends StoreException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a message and cause. */
  public StoreTimeoutException(String message, Throwable cause) {
    super(message, cause);
  }
}
