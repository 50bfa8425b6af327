package dev.tally.spring;

import dev.tally.FailurePolicy;
import dev.tally.LimitSpec;
import dev.tally.spi.LimiterRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A checked rate-limit rule: its name, its policies in order, its failure policy, and the version
 * of its limits (RateLimiter.withVersion).
 */
final class Rule {
  private final String name;
  private final List<LimitSpec> policies;
  private final FailurePolicy failurePolicy;
  private final long version;

  Rule(String name, List<LimitSpec> policies, FailurePolicy failurePolicy) {
    this(name, policies, failurePolicy, 0);
  }

  Rule(String name, List<LimitSpec> policies, FailurePolicy failurePolicy, long version) {
    this.name = Objects.requireNonNull(name, "name");
    if (policies.isEmpty()) {
      throw new IllegalArgumentException("rate-limit rule '" + name + "' has no limit: set its limit"
          + " (e.g. token-bucket 100/1m) or its policies");
    }
    this.policies = List.copyOf(policies);
    this.failurePolicy = Objects.requireNonNull(failurePolicy, "failurePolicy");
    if (version < 0 || version > LimiterRecord.MAX_LIMITS_VERSION) {
      throw new IllegalArgumentException("rate-limit rule '" + name + "' has version " + version
          + "; a version is from 0 to " + LimiterRecord.MAX_LIMITS_VERSION + " (e.g. 2, or a yyyyMMddHHmmss stamp)");
    }
    this.version = version;
  }

  /**
   * The rule {@code name} from its properties: {@code limit} is one policy named after the rule,
   * {@code policies} several by id; both may be given (the limit comes first).
   *
   * @param where the property prefix, for error messages
   */
  static Rule of(String name, TallyProperties.Rule p, String where) {
    return of(name, name, p, where);
  }

  /** {@link #of(String, TallyProperties.Rule, String)}, its {@code limit} a policy named {@code limitId}. */
  static Rule of(String name, String limitId, TallyProperties.Rule p, String where) {
    List<LimitSpec> policies = new ArrayList<>();
    try {
      if (p.getLimit() != null && !p.getLimit().isBlank()) {
        policies.add(LimitSpec.parse(p.getLimit(), limitId));
      }
      for (Map.Entry<String, String> e : p.getPolicies().entrySet()) {
        policies.add(LimitSpec.parse(e.getValue(), e.getKey()));
      }
      FailurePolicy fp = p.getFailurePolicy() == null ? FailurePolicy.FAIL_OPEN : p.getFailurePolicy();
      return new Rule(name, policies, fp, p.getVersion());
    } catch (IllegalArgumentException e) {
      // The message says it all; the cause would only repeat it.
      throw new IllegalArgumentException(where + ": " + e.getMessage());
    }
  }

  String name() {
    return name;
  }

  List<LimitSpec> policies() {
    return policies;
  }

  FailurePolicy failurePolicy() {
    return failurePolicy;
  }

  long version() {
    return version;
  }

  @Override
  public String toString() {
    return name + policies;
  }
}
