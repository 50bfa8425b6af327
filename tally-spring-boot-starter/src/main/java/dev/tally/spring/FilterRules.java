package dev.tally.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * The filter rules of {@code tally.filter.rules}, checked at startup and matched against
 * requests: the part the servlet and the WebFlux filter share.
 */
final class FilterRules {
  private final List<Compiled> rules;

  private record Compiled(List<PathPattern> paths, Set<String> methods, KeySource key, Rule rule, long permits) {
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
      Rule rule;
      if (r.getRule() != null && !r.getRule().isBlank()) {
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
          KeySource.parse(r.getKey(), expressions, where + ".key"), rule, r.getPermits()));
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

  /** The rules that apply to {@code request}, each with its key; empty if none. */
  List<TallyRateLimits.Target> targets(RateLimitRequest request, String pathWithinApplication) {
    PathContainer container = PathContainer.parsePath(pathWithinApplication);
    List<TallyRateLimits.Target> out = List.of();
    for (Compiled c : rules) {
      Map<String, String> variables = c.match(request.getMethod(), container);
      if (variables != null) {
        if (out.isEmpty()) {
          out = new ArrayList<>(2);
        }
        String key = c.key().keyOf(request.withPathVariables(variables));
        out.add(new TallyRateLimits.Target(c.rule(), key, c.permits()));
      }
    }
    return out;
  }
}
