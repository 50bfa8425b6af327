package dev.tally.spring;

import dev.tally.FailurePolicy;
import dev.tally.LimitSpec;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Applies a method's {@link RateLimited} annotations before it runs. Each method's annotations
 * are read and checked once (at startup, by {@link RateLimitedPostProcessor}); a call evaluates
 * the keys and checks every rule in one pass.
 */
final class RateLimitedInterceptor implements MethodInterceptor {
  private final Supplier<TallyRateLimits> limitsSupplier;
  private final Supplier<KeyExpressions> expressionsSupplier;
  private final Map<Method, List<Compiled>> compiled = new ConcurrentHashMap<>();
  private volatile TallyRateLimits limits;
  private volatile KeyExpressions expressions;

  /**
   * The rules and expressions are looked up on first use: this runs inside a bean post-processor,
   * which must not create the store (and everything it needs) before the other post-processors.
   */
  RateLimitedInterceptor(Supplier<TallyRateLimits> limits, Supplier<KeyExpressions> expressions) {
    this.limitsSupplier = limits;
    this.expressionsSupplier = expressions;
  }

  private TallyRateLimits limits() {
    TallyRateLimits l = limits;
    if (l == null) {
      limits = l = limitsSupplier.get();
    }
    return l;
  }

  private KeyExpressions expressions() {
    KeyExpressions e = expressions;
    if (e == null) {
      expressions = e = expressionsSupplier.get();
    }
    return e;
  }

  /** One annotation, resolved: its rule, its key expression (or none), its permits, its conditions (or null). */
  private record Compiled(Rule rule, String key, long permits, String executeCondition, String skipCondition) {
    boolean applies(KeyExpressions expressions, RateLimitRequest request, Method method, Object[] args) {
      if (executeCondition != null
          && !expressions.isTrue(executeCondition, request, method, args, "executeCondition")) {
        return false;
      }
      return skipCondition == null || !expressions.isTrue(skipCondition, request, method, args, "skipCondition");
    }
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Object target = invocation.getThis();
    Method method = target == null ? invocation.getMethod()
        : AopUtils.getMostSpecificMethod(invocation.getMethod(), target.getClass());
    List<Compiled> rules = compile(method);
    if (rules.isEmpty()) {
      return invocation.proceed();
    }
    RateLimitRequest request = WebRequests.current();
    List<TallyRateLimits.Target> targets = new ArrayList<>(rules.size());
    for (Compiled c : rules) {
      if (!c.applies(expressions(), request, method, invocation.getArguments())) {
        continue;
      }
      String key = c.key().isEmpty() ? KeySource.GLOBAL_KEY
          : expressions().evaluate(c.key(), request, method, invocation.getArguments());
      targets.add(new TallyRateLimits.Target(c.rule(), key, c.permits()));
    }
    if (targets.isEmpty()) {
      return invocation.proceed();
    }
    RateLimitVerdict verdict = WebRequests.addHeaders(limits().check(targets));
    if (!verdict.allowed()) {
      throw new RateLimitExceededException(verdict);
    }
    return invocation.proceed();
  }

  /** Whether {@code method} carries the annotation (the pointcut asks). */
  static boolean annotated(Method method) {
    return !AnnotatedElementUtils.findMergedRepeatableAnnotations(method, RateLimited.class).isEmpty();
  }

  /**
   * Reads and checks the annotations of {@code method}.
   *
   * @throws IllegalArgumentException naming the method and what is wrong
   */
  List<Compiled> compile(Method method) {
    return compiled.computeIfAbsent(method, this::read);
  }

  private List<Compiled> read(Method method) {
    Set<RateLimited> annotations = AnnotatedElementUtils.findMergedRepeatableAnnotations(method, RateLimited.class);
    String where = "@RateLimited on " + method.getDeclaringClass().getName() + "." + method.getName();
    List<Compiled> out = new ArrayList<>();
    int n = 0;
    for (RateLimited a : annotations) {
      Rule rule = rule(a, method, where, n++, annotations.size());
      if (a.permits() < 0) {
        throw new IllegalArgumentException(where + ": permits must be zero or more, not " + a.permits());
      }
      if (!a.key().isEmpty()) {
        expressions().parse(a.key(), where);
      }
      String execute = condition(a.executeCondition(), where + ": executeCondition");
      String skip = condition(a.skipCondition(), where + ": skipCondition");
      out.add(new Compiled(rule, a.key(), a.permits(), execute, skip));
    }
    return List.copyOf(out);
  }

  /** A condition, parsed so that a bad one fails at startup; null if none. */
  private String condition(String text, String where) {
    if (text.isBlank()) {
      return null;
    }
    expressions().parse(text.strip(), where);
    return text.strip();
  }

  private Rule rule(RateLimited a, Method method, String where, int index, int count) {
    if (!a.value().isEmpty()) {
      if (a.limits().length > 0 || !a.name().isEmpty() || !a.failurePolicy().isEmpty()) {
        throw new IllegalArgumentException(where + ": give either a rule name (\"" + a.value()
            + "\") or inline limits, name and failurePolicy, not both");
      }
      if (!limits().hasRule(a.value())) {
        throw new IllegalArgumentException(where + ": no rate-limit rule '" + a.value()
            + "'; define tally.limits." + a.value() + ".limit (rules defined: " + limits().ruleNames() + ")");
      }
      return limits().rule(a.value());
    }
    if (a.limits().length == 0) {
      throw new IllegalArgumentException(where + ": name a rule of tally.limits (@RateLimited(\"api\"))"
          + " or give limits inline (@RateLimited(limits = \"token-bucket 10/1s\"))");
    }
    String name = !a.name().isEmpty() ? a.name()
        : method.getDeclaringClass().getSimpleName() + "." + method.getName() + (count > 1 ? "." + index : "");
    List<LimitSpec> policies = new ArrayList<>();
    try {
      for (int i = 0; i < a.limits().length; i++) {
        String text = a.limits()[i];
        int eq = text.indexOf('=');
        String id = eq > 0 ? text.substring(0, eq).strip() : a.limits().length == 1 ? name : name + "." + i;
        policies.add(LimitSpec.parse(eq > 0 ? text.substring(eq + 1) : text, id));
      }
      return new Rule(name, policies, failurePolicy(a.failurePolicy()));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": " + e.getMessage());
    }
  }

  private static FailurePolicy failurePolicy(String text) {
    return text.isEmpty() ? FailurePolicy.FAIL_OPEN : FailurePolicy.parse(text);
  }

}
