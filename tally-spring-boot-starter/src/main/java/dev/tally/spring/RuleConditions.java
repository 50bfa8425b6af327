package dev.tally.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.springframework.http.server.PathContainer;
import org.springframework.web.util.pattern.PathPattern;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * When a filter rule applies, beyond its paths and methods: its {@code execute-condition} and
 * {@code skip-condition} (SpEL over the request) and its {@code execute-predicates} and
 * {@code skip-predicates}, in bucket4j-spring-boot-starter's syntax so that its configurations
 * port over:
 *
 * <pre>
 * PATH=/api/**,/admin        the path (within the application) matches one of the patterns
 * METHOD=GET,POST            the method is one of these
 * QUERY=debug                the query has the parameter (with or without a value)
 * HEADER=X-Client            the request has the header
 * HEADER=Accept,.*pdf.*      ...with a value the regular expression matches whole
 * </pre>
 *
 * <p>As in bucket4j, a rule applies only if every execute predicate matches, and is skipped only
 * if every skip predicate matches (one list is an AND). The conditions come after the predicates:
 * the rule applies when the execute condition is true and the skip condition is not.
 */
final class RuleConditions {
  static final RuleConditions ALWAYS = new RuleConditions(List.of(), List.of(), null, null, null);

  /** One predicate over a request and its path within the application. */
  @FunctionalInterface
  interface RequestPredicate {
    boolean test(RateLimitRequest request, PathContainer path);
  }

  private final List<RequestPredicate> execute;
  private final List<RequestPredicate> skip;
  private final String executeCondition;
  private final String skipCondition;
  private final KeyExpressions expressions;

  private RuleConditions(List<RequestPredicate> execute, List<RequestPredicate> skip, String executeCondition,
      String skipCondition, KeyExpressions expressions) {
    this.execute = execute;
    this.skip = skip;
    this.executeCondition = executeCondition;
    this.skipCondition = skipCondition;
    this.expressions = expressions;
  }

  /**
   * The conditions of {@code rule}, checked.
   *
   * @throws IllegalArgumentException naming the property that is wrong
   */
  static RuleConditions of(TallyProperties.FilterRule rule, KeyExpressions expressions, String where) {
    List<RequestPredicate> execute = predicates(rule.getExecutePredicates(), where + ".execute-predicates");
    List<RequestPredicate> skip = predicates(rule.getSkipPredicates(), where + ".skip-predicates");
    String executeCondition = blankToNull(rule.getExecuteCondition());
    String skipCondition = blankToNull(rule.getSkipCondition());
    if (executeCondition != null) {
      expressions.parse(executeCondition, where + ".execute-condition");
    }
    if (skipCondition != null) {
      expressions.parse(skipCondition, where + ".skip-condition");
    }
    if (execute.isEmpty() && skip.isEmpty() && executeCondition == null && skipCondition == null) {
      return ALWAYS;
    }
    return new RuleConditions(execute, skip, executeCondition, skipCondition, expressions);
  }

  /** Whether the rule applies to {@code request}, whose path within the application is {@code path}. */
  boolean applies(RateLimitRequest request, PathContainer path) {
    for (RequestPredicate p : execute) {
      if (!p.test(request, path)) {
        return false;
      }
    }
    if (!skip.isEmpty() && skip.stream().allMatch(p -> p.test(request, path))) {
      return false;
    }
    if (executeCondition != null && !isTrue(executeCondition, request, "execute-condition")) {
      return false;
    }
    return skipCondition == null || !isTrue(skipCondition, request, "skip-condition");
  }

  private boolean isTrue(String expression, RateLimitRequest request, String what) {
    return Boolean.TRUE.equals(expressions.value(expression, request, request, null, what));
  }

  private static final Pattern KIND = Pattern.compile("(?i)\\s*(PATH|METHOD|QUERY|HEADER)\\s*=.*");

  private static List<RequestPredicate> predicates(List<String> given, String where) {
    List<String> texts = rejoined(given);
    List<RequestPredicate> out = new ArrayList<>(texts.size());
    for (int i = 0; i < texts.size(); i++) {
      out.add(predicate(texts.get(i), where + "[" + i + "]"));
    }
    return List.copyOf(out);
  }

  /**
   * The predicates as written. Spring Boot splits a single value at its commas when it binds a
   * list ({@code execute-predicates: PATH=/a,/b} arrives as {@code PATH=/a} and {@code /b}), so
   * a piece that does not start with a kind belongs to the one before it.
   */
  static List<String> rejoined(List<String> given) {
    List<String> out = new ArrayList<>(given.size());
    for (String piece : given) {
      if (piece != null && !out.isEmpty() && !KIND.matcher(piece).matches()) {
        out.set(out.size() - 1, out.get(out.size() - 1) + "," + piece);
      } else {
        out.add(piece);
      }
    }
    return out;
  }

  /**
   * Parses one predicate, {@code KIND=ARGUMENTS}.
   *
   * @throws IllegalArgumentException listing the kinds
   */
  static RequestPredicate predicate(String text, String where) {
    String t = text == null ? "" : text.strip();
    int eq = t.indexOf('=');
    String kind = eq < 0 ? t : t.substring(0, eq).strip().toUpperCase(Locale.ROOT);
    String arg = eq < 0 ? "" : t.substring(eq + 1).strip();
    if (eq < 0 || arg.isEmpty()) {
      throw new IllegalArgumentException(where + ": '" + t + "' is not a predicate; write PATH=/api/**,"
          + " METHOD=GET,POST, QUERY=param or HEADER=name[,regex]");
    }
    return switch (kind) {
      case "PATH" -> {
        PathPatternParser parser = new PathPatternParser();
        List<PathPattern> patterns = new ArrayList<>();
        for (String p : arg.split(",", -1)) {
          try {
            patterns.add(parser.parse(p.strip()));
          } catch (RuntimeException e) {
            throw new IllegalArgumentException(where + ": '" + p.strip() + "' is not a path pattern: "
                + e.getMessage(), e);
          }
        }
        yield (r, path) -> patterns.stream().anyMatch(p -> p.matches(path));
      }
      case "METHOD" -> {
        Set<String> methods = new TreeSet<>();
        for (String m : arg.split(",", -1)) {
          methods.add(m.strip().toUpperCase(Locale.ROOT));
        }
        yield (r, path) -> r.getMethod() != null && methods.contains(r.getMethod());
      }
      case "QUERY" -> (r, path) -> r.parameter(arg) != null;
      case "HEADER" -> header(arg, where);
      default -> throw new IllegalArgumentException(where + ": unknown predicate '" + kind + "'; one of PATH,"
          + " METHOD, QUERY, HEADER");
    };
  }

  /** {@code NAME} or {@code NAME,REGEX}; only the first comma separates, so the regex may hold more. */
  private static RequestPredicate header(String arg, String where) {
    int comma = arg.indexOf(',');
    String name = (comma < 0 ? arg : arg.substring(0, comma)).strip();
    if (comma < 0) {
      return (r, path) -> !r.headers(name).isEmpty();
    }
    Pattern regex;
    try {
      regex = Pattern.compile(arg.substring(comma + 1).strip());
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException(where + ": the header's value pattern does not compile: "
          + e.getDescription(), e);
    }
    return (r, path) -> r.headers(name).stream().anyMatch(v -> regex.matcher(v).matches());
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
