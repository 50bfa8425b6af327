package dev.tally.jdbc;

import dev.tally.TallyException;

/**
 * Thrown when another flusher already flushes the same prefix through the same ledger: it holds
 * the ledger's advisory lock for that prefix, and two flushers at once would only contend. The
 * other one finishes the work; try again later (or run the flush from one scheduled place).
 */
public class FlushBusyException extends TallyException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a message naming the prefix and the ledger. */
  public FlushBusyException(String message) {
    super(message);
  }
}
