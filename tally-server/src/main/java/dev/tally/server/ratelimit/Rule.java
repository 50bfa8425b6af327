package dev.tally.server.ratelimit;

import java.util.List;

/**
 * A {@code rate_limit} of a rules file (0 per unit refuses every request; no unit when
 * unlimited), written at {@code path} ({@code message_type=marketing.to_number}) in
 * {@code source} ({@code rules/messaging.yaml:7}). In quota mode a request over some of its
 * quotas still passes while one of them has room.
 */
public record Rule(long requestsPerUnit, Unit unit, boolean unlimited, boolean shadowMode,
    String name, List<String> replaces, String path, String source, boolean quotaMode) {
  public Rule {
    replaces = List.copyOf(replaces);
  }

  /** A rule outside quota mode. */
  public Rule(long requestsPerUnit, Unit unit, boolean unlimited, boolean shadowMode, String name,
      List<String> replaces, String path, String source) {
    this(requestsPerUnit, unit, unlimited, shadowMode, name, replaces, path, source, false);
  }

  /** "10 per minute", "unlimited". */
  public String describe() {
    return unlimited ? "unlimited" : requestsPerUnit + " per " + unit.yamlName();
  }
}
