package dev.tally;

/**
 * Thrown when a name is used as a counter while it holds a rate limiter's state, or the other
 * way round. Counters and limiters share one key space on every store, so a name is one kind at
 * a time; it is free for either once it is deleted, expired, or (a limiter) full again. Nothing
 * was changed.
 */
public class WrongKindException extends TallyException {
  private static final long serialVersionUID = 1L;

  /** The two kinds a name can hold. */
  public enum Kind {
    /** A counter: an integer or floating value. */
    COUNTER,
    /** A rate limiter's state. */
    LIMITER;

    String noun() {
      return this == COUNTER ? "a counter" : "a rate limiter's state";
    }
  }

  private final String key;
  private final Kind held;

  /**
   * Creates the exception for {@code key}, which holds {@code held} and was used as the other
   * kind.
   */
  public WrongKindException(String key, Kind held) {
    super("key '" + key + "' holds " + held.noun() + ", not " + other(held).noun() + "; counters"
        + " and rate limiters share one key space, so use another name for the "
        + (held == Kind.COUNTER ? "limiter" : "counter") + " (or delete the " + (held == Kind.COUNTER
            ? "counter" : "limiter's state with reset()") + " first)");
    this.key = key;
    this.held = held;
  }

  private static Kind other(Kind k) {
    return k == Kind.COUNTER ? Kind.LIMITER : Kind.COUNTER;
  }

  /** The key. */
  public String key() {
    return key;
  }

  /** What the key holds. */
  public Kind held() {
    return held;
  }
}
