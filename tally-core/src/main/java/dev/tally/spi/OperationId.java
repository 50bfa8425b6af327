package dev.tally.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * The id a caller gives a mutating operation so that a retry of it counts once.
 *
 * <p>Within a store's retention window ({@link StoreContext#operationRetention()}), a second call
 * carrying the same id applies nothing and returns exactly what the first call returned, from any
 * thread, process or host, even if the first call's reply never reached its caller. After the
 * window the id is forgotten and a repeat applies again. A call that failed (an overflow, a name
 * of the other kind, a store that could not be reached before anything was applied) records
 * nothing, so its retry runs afresh.
 *
 * <p>An id is 1 to {@value #MAX_LENGTH} printable ASCII characters ({@code 0x21}-{@code 0x7e}):
 * a UUID, a request id, or {@code batch-17:views:episode:512}. Ids share one space per store, so a
 * caller that derives them from its own request ids should prefix them with its name.
 */
public final class OperationId {
  /** The longest id, in characters. */
  public static final int MAX_LENGTH = 128;

  /** How long a store remembers an id unless told otherwise. */
  public static final Duration DEFAULT_RETENTION = Duration.ofHours(1);

  private final String value;

  private OperationId(String value) {
    this.value = value;
  }

  /**
   * Checks and wraps an id.
   *
   * @throws IllegalArgumentException if it is null, empty, longer than {@value #MAX_LENGTH}
   *     characters, or has a character outside printable ASCII
   */
  public static OperationId of(String value) {
    if (value == null) {
      throw new IllegalArgumentException("operation id must not be null");
    }
    if (value.isEmpty()) {
      throw new IllegalArgumentException("operation id must not be empty; use a request id or a UUID");
    }
    if (value.length() > MAX_LENGTH) {
      throw new IllegalArgumentException("operation id is " + value.length() + " characters; the"
          + " limit is " + MAX_LENGTH + " (hash a longer id, e.g. to a UUID)");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        throw new IllegalArgumentException("operation id has " + describe(c) + " at index " + i
            + "; use printable ASCII without spaces (letters, digits, - _ : . and the like)");
      }
    }
    return new OperationId(value);
  }

  private static String describe(char c) {
    return c == ' ' ? "a space" : "character U+" + String.format("%04X", (int) c);
  }

  /** The id as given. */
  public String value() {
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof OperationId other && other.value.equals(value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }

  @Override
  public String toString() {
    return value;
  }

  /**
   * Checks a retention window for ids.
   *
   * @throws IllegalArgumentException if it is not positive
   */
  public static Duration retention(Duration retention) {
    Objects.requireNonNull(retention, "retention");
    if (retention.isNegative() || retention.isZero()) {
      throw new IllegalArgumentException("operation id retention must be positive, not " + retention);
    }
    return retention;
  }
}
