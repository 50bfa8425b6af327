package dev.tally;

/**
 * Thrown when an operation would take an integer counter past the signed 64-bit range, or a
 * floating counter to an infinity. The counter keeps its previous value: Tally never wraps.
 */
public class CounterOverflowException extends TallyException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a message naming the key and the operands. */
  public CounterOverflowException(String message) {
    super(message);
  }
}
