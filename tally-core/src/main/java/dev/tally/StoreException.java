package dev.tally;

/**
 * A store could not carry out an operation: it was unreachable, too slow, or failed. These, and
 * only these, are subject to a {@link FailurePolicy}. When one is thrown the operation may or
 * may not have been applied; the store's documentation says which failures are ambiguous.
 */
public class StoreException extends TallyException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a message and cause. */
  public StoreException(String message, Throwable cause) {
    super(message, cause);
  }

  /** Creates the exception with a message. */
  public StoreException(String message) {
    super(message);
  }
}
