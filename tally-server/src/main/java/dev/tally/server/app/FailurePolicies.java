package dev.tally.server.app;

import dev.tally.FailurePolicy;
import java.util.Objects;

/**
 * What the server answers when its store fails, per group: a page-view counter may fail open
 * while a paid limiter fails closed. The text form is {@code --failure-policy}'s:
 * {@code fail-open} (both groups), or {@code limiters=fail-closed,counters=throw} (a group left
 * out keeps {@code throw}).
 */
public record FailurePolicies(FailurePolicy limiters, FailurePolicy counters) {
  public FailurePolicies {
    Objects.requireNonNull(limiters, "limiters");
    Objects.requireNonNull(counters, "counters");
    if (counters == FailurePolicy.FAIL_CLOSED) {
      throw new IllegalArgumentException("counters cannot fail closed: a counter has no \"deny\""
          + " (fail-closed would throw as throw does); give counters=throw or counters=fail-open");
    }
  }

  /** One policy for both groups; {@code fail-closed} applies to limiters, counters throw. */
  public static FailurePolicies both(FailurePolicy policy) {
    return new FailurePolicies(policy, policy == FailurePolicy.FAIL_CLOSED ? FailurePolicy.THROW : policy);
  }

  /**
   * Parses {@code fail-open} or {@code limiters=fail-open,counters=throw}.
   *
   * @throws IllegalArgumentException saying what a good one looks like
   */
  public static FailurePolicies parse(String text) {
    String t = text.strip();
    if (t.indexOf('=') < 0) {
      return both(FailurePolicy.parse(t));
    }
    FailurePolicy limiters = null;
    FailurePolicy counters = null;
    for (String part : t.split(",", -1)) {
      int eq = part.indexOf('=');
      String group = eq < 0 ? part.strip() : part.substring(0, eq).strip();
      if (eq < 0 || !(group.equals("limiters") || group.equals("counters"))) {
        throw new IllegalArgumentException("'" + part.strip() + "' is not GROUP=POLICY: expected"
            + " e.g. limiters=fail-closed,counters=fail-open (groups: limiters, counters)");
      }
      FailurePolicy p = FailurePolicy.parse(part.substring(eq + 1));
      if (group.equals("limiters") ? limiters != null : counters != null) {
        throw new IllegalArgumentException("the group " + group + " is given twice in '" + t + "'");
      }
      if (group.equals("limiters")) {
        limiters = p;
      } else {
        counters = p;
      }
    }
    return new FailurePolicies(limiters == null ? FailurePolicy.THROW : limiters,
        counters == null ? FailurePolicy.THROW : counters);
  }

  @Override
  public String toString() {
    return "limiters=" + limiters.text() + ",counters=" + counters.text();
  }
}
