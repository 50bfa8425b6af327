package dev.tally;

/**
 * Thrown by the no-default forms ({@link Counters#incrExisting}, {@link Counters#decrExisting})
 * when the counter is missing or expired, for code where a missing counter is a bug rather
 * than a zero. Nothing was written.
 */
public class KeyNotFoundException extends TallyException {
  private static final long serialVersionUID = 1L;
  private final String key;

  /** Creates the exception for {@code key}. */
  public KeyNotFoundException(String key) {
    super("counter '" + key + "' does not exist (or has expired); use incr(key, delta, default)"
        + " to create it on first use");
    this.key = key;
  }

  /** The key that was not found. */
  public String key() {
    return key;
  }
}
