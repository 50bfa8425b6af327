package dev.tally.spring;

import dev.tally.LimitSpec;
import dev.tally.Reservation;
import dev.tally.ReservationGoneException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.ToLongBiFunction;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * The filter rules of {@code tally.filter.rules}, checked at startup and matched against
 * requests: the part the servlet and the WebFlux filter share.
 */
final class FilterRules {
  private static final Log LOG = LogFactory.getLog(FilterRules.class);

  private final List<Compiled> rules;

  private record Compiled(List<PathPattern> paths, Set<String> methods, KeySource key, Rule rule, long permits,
      RuleConditions conditions, Plans plans, PostExecution post) {
    /** The pattern's variables if the request matches, else null. */
    Map<String, String> match(String method, PathContainer path) {
      if (!methods.isEmpty() && !methods.contains(method)) {
        return null;
      }
      if (paths.isEmpty()) {
        return Map.of();
      }
      for (PathPattern p : paths) {
        PathPattern.PathMatchInfo info = p.matchAndExtract(path);
        if (info != null) {
          return info.getUriVariables();
        }
      }
      return null;
    }
  }

  private FilterRules(List<Compiled> rules) {
    this.rules = rules;
  }

  /**
   * Checks the rules of {@code filter}.
   *
   * @throws IllegalArgumentException naming the property that is wrong
   */
  static FilterRules of(TallyProperties.Filter filter, TallyRateLimits limits, KeyExpressions expressions) {
    PathPatternParser parser = new PathPatternParser();
    List<Compiled> out = new ArrayList<>();
    List<TallyProperties.FilterRule> rules = filter.getRules();
    for (int i = 0; i < rules.size(); i++) {
      TallyProperties.FilterRule r = rules.get(i);
      String where = "tally.filter.rules[" + i + "]";
      List<PathPattern> paths = new ArrayList<>();
      for (String p : r.getPaths()) {
        try {
          paths.add(parser.parse(p));
        } catch (RuntimeException e) {
          throw new IllegalArgumentException(where + ".paths: '" + p + "' is not a path pattern: "
              + e.getMessage(), e);
        }
      }
      Set<String> methods = new TreeSet<>();
      for (String m : r.getMethods()) {
        methods.add(m.strip().toUpperCase(Locale.ROOT));
      }
      Rule rule = null;
      Plans plans = Plans.of(r, i, expressions, where);
      if (plans != null) {
        if (notBlank(r.getRule()) || notBlank(r.getLimit()) || !r.getPolicies().isEmpty()) {
          throw new IllegalArgumentException(where + ": give either plan and plans, or rule, or limit/policies");
        }
      } else if (r.getRule() != null && !r.getRule().isBlank()) {
        if ((r.getLimit() != null && !r.getLimit().isBlank()) || !r.getPolicies().isEmpty()) {
          throw new IllegalArgumentException(where + ": give either rule (a name in tally.limits) or"
              + " limit/policies, not both");
        }
        if (!limits.hasRule(r.getRule())) {
          throw new IllegalArgumentException(where + ".rule: no rule '" + r.getRule() + "' in tally.limits"
              + " (rules defined: " + limits.ruleNames() + ")");
        }
        rule = limits.rule(r.getRule());
      } else {
        rule = Rule.of("filter-" + i, r, where);
      }
      if (r.getPermits() < 0) {
        throw new IllegalArgumentException(where + ".permits must be zero or more, not " + r.getPermits());
      }
      out.add(new Compiled(List.copyOf(paths), Set.copyOf(methods),
          KeySource.parse(r.getKey(), expressions, where + ".key"), rule, r.getPermits(),
          RuleConditions.of(r, expressions, where), plans, PostExecution.of(r, expressions, where)));
    }
    return new FilterRules(List.copyOf(out));
  }

  boolean isEmpty() {
    return rules.isEmpty();
  }

  /** Whether any rule applies to a request, before its key is computed. */
  boolean matches(String method, String path) {
    PathContainer container = PathContainer.parsePath(path);
    for (Compiled c : rules) {
      if (c.match(method, container) != null) {
        return true;
      }
    }
    return false;
  }

  /** The rules that apply to {@code request}, each with its key; none if none. */
  Matched targets(RateLimitRequest request, String pathWithinApplication) {
    PathContainer container = PathContainer.parsePath(pathWithinApplication);
    List<TallyRateLimits.Target> out = List.of();
    List<PostExecution> post = null;
    for (Compiled c : rules) {
      Map<String, String> variables = c.match(request.getMethod(), container);
      if (variables == null) {
        continue;
      }
      RateLimitRequest facts = request.withPathVariables(variables);
      if (!c.conditions().applies(facts, container)) {
        continue;
      }
      if (out.isEmpty()) {
        out = new ArrayList<>(2);
      }
      Rule rule = c.plans() == null ? c.rule() : c.plans().ruleFor(facts);
      out.add(new TallyRateLimits.Target(rule, c.key().keyOf(facts), c.permits(),
          c.post() == null ? null : c.post().ttl()));
      if (c.post() != null) {
        if (post == null) {
          post = new ArrayList<>(2);
        }
        while (post.size() < out.size() - 1) {
          post.add(null);
        }
        post.add(c.post());
      }
    }
    return new Matched(request, out, post == null ? List.of() : post);
  }

  private static boolean notBlank(String s) {
    return s != null && !s.isBlank();
  }

  /**
   * The rules that apply to one request, and what settles them once it is answered.
   *
   * @param post each target's post-execution settings, by index (null or missing: none)
   */
  record Matched(RateLimitRequest request, List<TallyRateLimits.Target> targets, List<PostExecution> post) {
    boolean isEmpty() {
      return targets.isEmpty();
    }

    /** Whether a rule is charged after the response: it holds reservations until then. */
    boolean settlesAfter() {
      return !post.isEmpty();
    }

    /**
     * Gives back every target's units and cancels its reservations, after a refusal further down
     * the chain.
     *
     * @param admission what {@link #targets} were answered
     */
    void giveBack(TallyRateLimits limits, TallyRateLimits.Admission admission) {
      int at = 0;
      for (TallyRateLimits.Target t : targets) {
        int policies = t.rule().policies().size();
        try {
          limits.giveBack(t, admission.verdict().outcomes().subList(at, at + policies),
              admission.reservations().subList(at, at + policies));
        } catch (RuntimeException e) {
          LOG.warn("rate-limit rule '" + t.rule().name() + "': giving back the units of a refused call failed: " + e);
        }
        at += policies;
      }
    }

    /**
     * Settles the reservations of the rules charged after the response at what the response says
     * they cost: the surplus comes back, an excess is taken into the limiter's debt. A failure is
     * logged, never answered: the response has gone.
     *
     * @param admission what {@link #targets} were answered
     */
    void settle(TallyRateLimits.Admission admission, RateLimitResponse response) {
      forEachReserved(admission, (t, p) -> {
        try {
          return p.cost(request, response, t.permits());
        } catch (RuntimeException e) {
          LOG.warn("rate-limit rule '" + t.rule().name() + "': the cost after the response failed, so the "
              + t.estimate() + " units reserved before it stand: " + e);
          return t.estimate();
        }
      });
    }

    /**
     * Settles the reservations at their estimates, for a request whose response is not known (it
     * threw, or was cancelled): what it was charged before it ran stands, as it would when the
     * reservations' ttl ended, but now, so that they are not held until then.
     */
    void keep(TallyRateLimits.Admission admission) {
      forEachReserved(admission, (t, p) -> t.estimate());
    }

    /** Settles every reservation of {@code admission} at the cost {@code costOf} gives its target. */
    private void forEachReserved(TallyRateLimits.Admission admission,
        ToLongBiFunction<TallyRateLimits.Target, PostExecution> costOf) {
      int at = 0;
      for (int i = 0; i < targets.size(); i++) {
        TallyRateLimits.Target t = targets.get(i);
        int policies = t.rule().policies().size();
        List<Reservation> held = admission.reservations().subList(at, at + policies);
        at += policies;
        PostExecution p = i < post.size() ? post.get(i) : null;
        if (p == null || held.stream().allMatch(Objects::isNull)) {
          continue;
        }
        long cost = costOf.applyAsLong(t, p);
        for (Reservation r : held) {
          if (r != null) {
            settle(t, r, cost);
          }
        }
      }
    }

    private static void settle(TallyRateLimits.Target t, Reservation r, long cost) {
      try {
        r.settle(cost); // settle(0) is cancel: the whole estimate comes back
      } catch (ReservationGoneException e) {
        LOG.warn("rate-limit rule '" + t.rule().name() + "': the response came after the reservation's ttl ("
            + t.reservationTtl() + ", reservation-ttl), which settled it at its estimate, " + t.estimate()
            + " units, in place of " + cost + ": give the rule a reservation-ttl longer than its slowest request");
      } catch (RuntimeException e) {
        LOG.warn("rate-limit rule '" + t.rule().name() + "': settling at " + cost + " units failed, so the "
            + t.estimate() + " reserved stand (settled so when the reservation's ttl ends): " + e);
      }
    }
  }

  /**
   * A rule's plans: an expression over the request names one, whose limits apply. Each plan is its
   * own rule, named RULE.PLAN, so each keeps its own state; its one limit's policy is named after
   * the plan.
   */
  private record Plans(String expression, Map<String, Rule> rules, Rule fallback, KeyExpressions expressions) {
    static Plans of(TallyProperties.FilterRule r, int index, KeyExpressions expressions, String where) {
      boolean hasPlan = notBlank(r.getPlan());
      if (!hasPlan && r.getPlans().isEmpty()) {
        if (notBlank(r.getDefaultPlan())) {
          throw new IllegalArgumentException(where + ".default-plan needs plan and plans");
        }
        return null;
      }
      if (!hasPlan) {
        throw new IllegalArgumentException(where + ".plans needs plan, an expression naming one of them"
            + " (e.g. \"@accounts.planOf(principal) ?: 'free'\")");
      }
      if (r.getPlans().isEmpty()) {
        throw new IllegalArgumentException(where + ".plan needs plans, the limits of each plan by name");
      }
      expressions.parse(r.getPlan(), where + ".plan");
      Map<String, Rule> rules = new LinkedHashMap<>();
      r.getPlans().forEach((name, p) -> {
        if (!LimitSpec.NAME.matcher(name).matches()) {
          throw new IllegalArgumentException(where + ".plans." + name + ": a plan name must be 1 to 64"
              + " letters, digits or . _ : -");
        }
        rules.put(name, Rule.of("filter-" + index + "." + name, name, p, where + ".plans." + name));
      });
      Rule fallback;
      if (notBlank(r.getDefaultPlan())) {
        fallback = rules.get(r.getDefaultPlan().strip());
        if (fallback == null) {
          throw new IllegalArgumentException(where + ".default-plan: no plan '" + r.getDefaultPlan()
              + "' (plans: " + rules.keySet() + ")");
        }
      } else {
        fallback = rules.values().iterator().next();
      }
      return new Plans(r.getPlan().strip(), Map.copyOf(rules), fallback, expressions);
    }

    Rule ruleFor(RateLimitRequest request) {
      Object name = expressions.value(expression, request, request, null, "plan");
      Rule rule = name == null ? null : rules.get(name.toString());
      return rule == null ? fallback : rule;
    }
  }
}
