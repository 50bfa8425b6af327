package dev.tally.server.ratelimit;

import java.util.List;

/**
 * A {@code rate_limit} of a rules file, where it was written, and what it limits.
 *
 * @param requestsPerUnit requests allowed per window; 0 refuses every request
 * @param unit the window, or null when unlimited
 * @param unlimited whether the descriptor is allowed without limit (nothing is counted)
 * @param shadowMode whether the limit is counted but never enforced
 * @param name the limit's name ({@code rate_limit.name}), or null
 * @param replaces the names of limits this one replaces when both match one request
 * @param path the descriptor path it is written under, e.g. {@code message_type=marketing.to_number}
 * @param source the file and line that hold it, e.g. {@code rules/messaging.yaml:7}
 * @param quotaMode whether the limit is one of a request's quotas ({@code quota_mode}): a request
 *     over some of its quotas still passes while one of them has room
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
