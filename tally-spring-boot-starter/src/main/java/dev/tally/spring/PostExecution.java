package dev.tally.spring;

import dev.tally.Tally;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a filter rule charges once the response is known: its {@code post-execute-condition} or
 * {@code charge-on-status} (whether the request counts at all) and its {@code post-execute-cost}
 * (how many units it costs).
 *
 * <p>The rule's {@code permits} are reserved before the request ({@link dev.tally.RateLimiter#reserve}),
 * so that a limit holds under concurrency: twenty failed logins at once against 3 a minute let
 * exactly three through. Admitting while the limiter is not empty and charging after, as bucket4j
 * does, would let all twenty through. The reservation is settled at the cost once the response is
 * known: the surplus comes back, and an excess is taken into the limiter's debt, which delays later
 * requests rather than going unpaid. The price is that a request that ends up costing less holds
 * its estimate while it runs, so a concurrent request may be refused by units about to come back.
 * A reservation that is never settled (the application stopped mid-request) is settled at its
 * estimate when its {@code reservation-ttl} ends.
 */
final class PostExecution {
  /** How long a reservation is held unless the rule says otherwise: well beyond a slow request. */
  static final Duration DEFAULT_TTL = Duration.ofMinutes(5);

  private final String condition;
  private final Set<Integer> statuses;
  private final String cost;
  private final Duration ttl;
  private final KeyExpressions expressions;

  private PostExecution(String condition, Set<Integer> statuses, String cost, Duration ttl,
      KeyExpressions expressions) {
    this.condition = condition;
    this.statuses = statuses;
    this.cost = cost;
    this.ttl = ttl;
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
    Duration ttl = rule.getReservationTtl();
    if (condition == null && statuses.isEmpty() && cost == null) {
      if (ttl != null) {
        throw new IllegalArgumentException(where + ".reservation-ttl applies to a rule charged after the"
            + " response: give it post-execute-cost, post-execute-condition or charge-on-status, or drop"
            + " reservation-ttl");
      }
      return null;
    }
    return new PostExecution(condition, Set.copyOf(statuses), cost, checkTtl(ttl, where), expressions);
  }

  /** The ttl of the rule's reservations, within what the library takes. */
  private static Duration checkTtl(Duration ttl, String where) {
    if (ttl == null) {
      return DEFAULT_TTL;
    }
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException(where + ".reservation-ttl must be positive (longer than the slowest"
          + " request, e.g. 5m), not " + ttl);
    }
    Duration retention = Tally.DEFAULT_OPERATION_RETENTION;
    if (ttl.compareTo(retention) > 0) {
      throw new IllegalArgumentException(where + ".reservation-ttl (" + ttl + ") must not exceed the store's"
          + " operation-id retention (" + retention + "), for which the store remembers a reservation's"
          + " steps so that a retried settlement applies once: give " + retention.toMinutes() + "m or less");
    }
    return ttl;
  }

  /** How long a reservation of the rule is held before it is settled at its estimate by itself. */
  Duration ttl() {
    return ttl;
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
