package dev.tally.spring;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a filter rule charges once the response is known: its {@code post-execute-condition} or
 * {@code charge-on-status} (whether the request counts at all) and its {@code post-execute-cost}
 * (how many units it costs).
 *
 * <p>The rule's {@code permits} are taken before the request, as for any rule, so that a limit
 * holds under concurrency: twenty failed logins at once against 3 a minute let exactly three
 * through. Estimating before and charging after, as bucket4j does, would let all twenty through.
 * The price is that a request that ends up not counting holds its units while it runs, so a
 * concurrent request may be refused by units that are about to come back.
 */
final class PostExecution {
  private final String condition;
  private final Set<Integer> statuses;
  private final String cost;
  private final KeyExpressions expressions;

  private PostExecution(String condition, Set<Integer> statuses, String cost, KeyExpressions expressions) {
    this.condition = condition;
    this.statuses = statuses;
    this.cost = cost;
    this.expressions = expressions;
  }

  /**
   * The post-execution settings of {@code rule}, or null if it has none.
   *
   * @throws IllegalArgumentException naming the property that is wrong
   */
  static PostExecution of(TallyProperties.FilterRule rule, KeyExpressions expressions, String where) {
    String condition = blankToNull(rule.getPostExecuteCondition());
    List<Integer> statusList = rule.getChargeOnStatus();
    String cost = blankToNull(rule.getPostExecuteCost());
    if (condition != null && !statusList.isEmpty()) {
      throw new IllegalArgumentException(where + ": give either post-execute-condition or charge-on-status,"
          + " not both");
    }
    Set<Integer> statuses = new TreeSet<>();
    for (Integer s : statusList) {
      if (s == null || s < 100 || s > 599) {
        throw new IllegalArgumentException(where + ".charge-on-status: " + s + " is not an HTTP status");
      }
      statuses.add(s);
    }
    if (condition != null) {
      expressions.parse(condition, where + ".post-execute-condition");
    }
    if (cost != null) {
      expressions.parse(cost, where + ".post-execute-cost");
    }
    if (condition == null && statuses.isEmpty() && cost == null) {
      return null;
    }
    return new PostExecution(condition, Set.copyOf(statuses), cost, expressions);
  }

  /**
   * The units the request costs now that {@code response} is known.
   *
   * @throws IllegalStateException if an expression fails or the cost is not a whole number of zero or more
   */
  long cost(RateLimitRequest request, RateLimitResponse response, long permits) {
    if (!statuses.isEmpty() && !statuses.contains(response.getStatus())) {
      return 0;
    }
    if (condition != null && !Boolean.TRUE.equals(
        expressions.value(condition, response, request, response, "post-execute-condition"))) {
      return 0;
    }
    if (cost == null) {
      return permits;
    }
    Object value = expressions.value(cost, response, request, response, "post-execute-cost");
    long units;
    if (value instanceof Number n) {
      units = n.longValue();
    } else if (value instanceof CharSequence text) {
      try {
        units = Long.parseLong(text.toString().strip());
      } catch (NumberFormatException e) {
        throw new IllegalStateException("post-execute-cost '" + cost + "' gave '" + text + "', not a whole number", e);
      }
    } else if (value == null) {
      return permits; // nothing said (no such header): the request costs what was taken
    } else {
      throw new IllegalStateException("post-execute-cost '" + cost + "' gave a " + value.getClass().getName()
          + ", not a number");
    }
    if (units < 0) {
      throw new IllegalStateException("post-execute-cost '" + cost + "' gave " + units + ", below zero");
    }
    return units;
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
