package dev.tally;

import java.util.Locale;

/**
 * What an operation does when its store cannot be reached or does not answer in time.
 *
 * <p>The right answer depends on what is counted, so it is chosen per counter group and per
 * limiter rather than per store: a page-view counter can afford to drop a count while a store
 * is down ({@link #FAIL_OPEN}), a paid quota cannot ({@link #FAIL_CLOSED} or {@link #THROW}).
 * The counting guide this library grew from warns that silently returning
 * {@code default + delta} turns a quota into a lost increment "with only a log line to show for
 * it", which is why {@link #THROW} is the default.
 *
 * <p>Only store failures ({@link StoreException}) are subject to the policy. Invalid input,
 * overflow and missing keys are always thrown: they are bugs or answers, not outages.
 * Every fail-open or fail-closed answer is logged and reported to {@link TallyListener}.
 */
public enum FailurePolicy {
  /** Throw the {@link StoreUnavailableException} or {@link StoreTimeoutException}. The default. */
  THROW,
  /**
   * Pretend the operation succeeded: {@code incr} returns {@code default + delta}, reads return
   * nothing, {@code add} returns {@code false}, limiters allow.
   */
  FAIL_OPEN,
  /** Limiters deny. Counter operations, which have no "deny", throw as with {@link #THROW}. */
  FAIL_CLOSED;

  /**
   * The policy named {@code text} as configuration writes it: {@code throw}, {@code fail-open} or
   * {@code fail-closed} (any case, {@code _} for {@code -}).
   *
   * @throws IllegalArgumentException naming the three
   */
  public static FailurePolicy parse(String text) {
    try {
      return valueOf(text.strip().toUpperCase(Locale.ROOT).replace('-', '_'));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("'" + text + "' is not a failure policy: expected throw,"
          + " fail-open or fail-closed", e);
    }
  }

  /** Its name as {@link #parse} reads it: {@code fail-open}. */
  public String text() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
