package dev.tally;

/**
 * Thrown when an integer operation ({@code incr(key, long)}, {@code get}, {@code pop}) meets a
 * counter that holds a floating value. A floating delta turns a counter floating for good, as
 * Redis' {@code INCRBYFLOAT} does; read it with {@link Counters#getDouble} or
 * {@link Counters#popDouble}. Nothing was written.
 */
public class NotAnIntegerException extends TallyException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception for {@code key}. */
  public NotAnIntegerException(String key) {
    super("counter '" + key + "' holds a floating value; use the double forms"
        + " (incr(key, double), getDouble, popDouble) for it");
  }
}
