package dev.tally;

/** The root of every exception Tally throws for a reason of its own. */
public class TallyException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates an exception with a message that says what went wrong and what to do. */
  public TallyException(String message) {
    super(message);
  }

  /** Creates an exception with a message and the underlying cause. */
  public TallyException(String message, Throwable cause) {
    super(message, cause);
  }
}
