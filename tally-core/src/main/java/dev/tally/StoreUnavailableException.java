package dev.tally;

/** The store could not be reached (connection refused, closed, no primary). */
public class StoreUnavailableException extends StoreException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a message and cause. */
  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
