package dev.tally.spring;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;

/**
 * SpEL expressions of keys, conditions, plans and costs, parsed once each. The expressions come
 * from the application's own annotations and configuration, never from a request, so they get a
 * full evaluation context (bean references with {@code @name} included).
 */
final class KeyExpressions {
  private final SpelExpressionParser parser = new SpelExpressionParser();
  private final Map<String, Expression> parsed = new ConcurrentHashMap<>();
  private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
  private final BeanFactory beans;

  KeyExpressions(BeanFactory beans) {
    this.beans = beans;
  }

  /**
   * Parses {@code expression}, so that a bad one fails at startup.
   *
   * @throws IllegalArgumentException naming the expression and where it is
   */
  Expression parse(String expression, String where) {
    try {
      return parsed.computeIfAbsent(expression, parser::parseExpression);
    } catch (ExpressionException e) {
      throw new IllegalArgumentException(where + ": expression '" + expression + "' does not parse: "
          + e.getMessage(), e);
    }
  }

  /** The key for a request alone (filter rules). */
  String evaluate(String expression, RateLimitRequest request) {
    StandardEvaluationContext context = new StandardEvaluationContext(request);
    return evaluate(expression, context);
  }

  /** The key for a call of {@code method} with {@code args}, whose arguments are variables. */
  String evaluate(String expression, RateLimitRequest request, Method method, Object[] args) {
    MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(request, method, args, names);
    return evaluate(expression, context);
  }

  /**
   * Whether {@code expression} is {@code true} for a call of {@code method} with {@code args}
   * (its arguments are variables, as for a key): a {@link RateLimited} condition.
   *
   * @param what what the expression is, for the error message (e.g. skipCondition)
   * @throws IllegalStateException naming the expression if it fails
   */
  boolean isTrue(String expression, RateLimitRequest request, Method method, Object[] args, String what) {
    MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(request, method, args, names);
    if (beans != null) {
      context.setBeanResolver(new BeanFactoryResolver(beans));
    }
    try {
      return Boolean.TRUE.equals(parse(expression, what).getValue(context));
    } catch (ExpressionException ex) {
      throw new IllegalStateException(what + " '" + expression + "' failed: " + ex.getMessage(), ex);
    }
  }

  private String evaluate(String expression, StandardEvaluationContext context) {
    if (beans != null) {
      context.setBeanResolver(new BeanFactoryResolver(beans));
    }
    return asKey(parse(expression, "key"), context, expression);
  }

  /**
   * The value of {@code expression} over {@code root}, with {@code #request} and, after the
   * response, {@code #response} as variables: a filter rule's conditions, plan and cost.
   *
   * @param what what the expression is for, for the error message (e.g. skip-condition)
   * @throws IllegalStateException naming the expression if it fails
   */
  Object value(String expression, Object root, RateLimitRequest request, RateLimitResponse response,
      String what) {
    StandardEvaluationContext context = new StandardEvaluationContext(root);
    context.setVariable("request", request);
    if (response != null) {
      context.setVariable("response", response);
    }
    if (beans != null) {
      context.setBeanResolver(new BeanFactoryResolver(beans));
    }
    try {
      return parse(expression, what).getValue(context);
    } catch (ExpressionException ex) {
      throw new IllegalStateException(what + " '" + expression + "' failed: " + ex.getMessage(), ex);
    }
  }

  private static String asKey(Expression e, EvaluationContext context, String text) {
    Object value;
    try {
      value = e.getValue(context);
    } catch (ExpressionException ex) {
      throw new IllegalStateException("rate-limit key expression '" + text + "' failed: " + ex.getMessage(), ex);
    }
    return value == null ? null : value.toString();
  }
}
