package dev.tally.jdbc;

import java.time.Duration;

/**
 * When one call must be over, from when it started: it may wait for a connection (or a batch
 * leader) until {@link #acquireBy}, and hears from the server until {@link #answerBy}, a little
 * after the statement timeout would have fired on a statement sent at once, so that PostgreSQL's
 * own cancel (a clean rollback) normally comes first and the socket timeout only catches a server
 * that does not answer at all.
 */
final class Deadline {
  private final long acquireBy;
  private final long answerBy;

  private Deadline(long acquireBy, long answerBy) {
    this.acquireBy = acquireBy;
    this.answerBy = answerBy;
  }

  /** The deadline of a call starting now under {@code settings}. */
  static Deadline start(PostgresSettings settings) {
    long now = System.nanoTime();
    return new Deadline(now + settings.timeout.toNanos(), now + settings.answerTimeout().toNanos());
  }

  /** Milliseconds left to wait for a connection; 0 or less when that time is over. */
  long acquireMillisLeft() {
    return Math.floorDiv(acquireBy - System.nanoTime(), 1_000_000L);
  }

  /** Milliseconds left to wait for the server's answer; 0 or less when that time is over. */
  long answerMillisLeft() {
    return Math.floorDiv(answerBy - System.nanoTime(), 1_000_000L);
  }

  /** The instant ({@link System#nanoTime}) the call gives up. */
  long answerByNanos() {
    return answerBy;
  }

  /**
   * How far past the statement timeout a socket waits: an eighth of it, from 250 ms (HikariCP's
   * shortest validation, which shares this grace) to 1 s. Enough for the server's cancel to come
   * back first over any sane network, and small, because it is what a call may overrun its
   * timeout by when the server is away.
   */
  static Duration grace(Duration timeout) {
    long eighth = timeout.toMillis() / 8;
    return Duration.ofMillis(Math.max(250, Math.min(1_000, eighth)));
  }
}
