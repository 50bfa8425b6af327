package dev.tally;

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
  FAIL_CLOSED
}
