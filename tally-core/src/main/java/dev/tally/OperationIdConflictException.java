package dev.tally;

/**
 * Thrown when an operation id is used again, within the store's retention window, for an
 * operation other than the one it first carried (another key, kind or argument). Nothing was
 * applied. An id names one operation: give each new operation a new id, and reuse an id only to
 * retry the very same call. Over HTTP this is a {@code 422} (the Idempotency-Key draft's "key
 * reused with a different request").
 */
public class OperationIdConflictException extends TallyException {
  private static final long serialVersionUID = 1L;

  private final String operationId;

  /** Creates the exception for {@code operationId}, now carried by an operation on {@code key}. */
  public OperationIdConflictException(String operationId, String key) {
    super("operation id '" + operationId + "' was already used for a different operation (now on"
        + " key '" + key + "'); nothing was applied. Use a new id for a new operation, and the same"
        + " id only to retry the same call");
    this.operationId = operationId;
  }

  /** The id that was reused. */
  public String operationId() {
    return operationId;
  }
}
