package dev.tally;

/**
 * Thrown when a bounded increment inside a transaction would take its counter past a refusing
 * {@link Bounds}: the whole transaction is refused and nothing in it is applied. Outside a
 * transaction a refusal is not an error; it is a {@link BoundedResult} with
 * {@code applied() == false}.
 */
public class CounterBoundException extends TallyException {
  private static final long serialVersionUID = 1L;

  private final String key;
  private final long value;

  /** Creates the exception for the counter {@code key} that kept {@code value}. */
  public CounterBoundException(String key, long value, String message) {
    super(message);
    this.key = key;
    this.value = value;
  }

  /** The full key of the counter whose bound refused. */
  public String key() {
    return key;
  }

  /**
   * The value the counter kept: its current value, or the default it would have started from if
   * it is missing.
   */
  public long value() {
    return value;
  }
}
