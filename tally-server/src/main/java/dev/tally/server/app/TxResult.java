package dev.tally.server.app;

import java.util.List;

/** The results of a transaction, one per operation, in order. */
public record TxResult(List<Item> results) {
  /**
   * One operation's result: its value (null for a get of a missing counter), or for a delete
   * whether there was something to delete.
   */
  public record Item(String key, Number value, Boolean deleted) {}
}
