package dev.tally.server.ratelimit;

import java.util.List;

/**
 * A {@code rate_limit} of a rules file (0 per unit refuses every request; no unit when
 * unlimited), written at {@code path} ({@code message_type=marketing.to_number}) in
 * {@code source} ({@code rules/messaging.yaml:7}). In quota mode a request over some of its
 * quotas still passes while one of them has room. With {@code chargeHits} its hits are charged,
 * whether or not they fit, into the limit's bounded debt: a cost Envoy sends at stream end.
 */
public record Rule(long requestsPerUnit, Unit unit, boolean unlimited, boolean shadowMode,
    String name, List<String> replaces, String path, String source, boolean quotaMode,
    boolean chargeHits) {
  public Rule {
    replaces = List.copyOf(replaces);
  }

  /** "10 per minute", "unlimited". */
  public String describe() {
    return unlimited ? "unlimited" : requestsPerUnit + " per " + unit.yamlName();
  }
}
