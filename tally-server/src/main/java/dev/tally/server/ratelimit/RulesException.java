package dev.tally.server.ratelimit;

/**
 * A rules file that cannot be used, with where and why: {@code rules/api.yaml:12: unknown key
 * 'rate_limt' ...}. Nothing of a set of files is applied while one of them is refused.
 */
public final class RulesException extends Exception {
  private static final long serialVersionUID = 1L;

  /** @param message the file (and line), then what is wrong and how to fix it */
  public RulesException(String message) {
    super(message);
  }
}
