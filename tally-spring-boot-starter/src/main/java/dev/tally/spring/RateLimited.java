package dev.tally.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Repeatable;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Limits calls of a method of a Spring bean (a controller, a service): a call over the limit
 * does not run and throws {@link RateLimitExceededException}, which a web application answers
 * {@code 429} with the {@code RateLimit} header fields and an RFC 9457 body.
 *
 * <pre>{@code
 * @GetMapping("/orders/{id}")
 * @RateLimited(value = "api", key = "#id")                         // a rule of tally.limits
 * @RateLimited(limits = "token-bucket 5/1s", key = "header('X-Api-Key')")  // an inline rule
 * Order order(@PathVariable String id) { ... }
 *
 * @RateLimited(value = "exports", key = "principal", permits = 10)  // 10 units a call
 * void export(...) { ... }
 * }</pre>
 *
 * <p>Several annotations on one method all apply, in order: the call runs only if every one
 * allows it, and a denial gives back what the ones before it took. {@link #executeCondition()}
 * and {@link #skipCondition()} leave an annotation out of a call:
 *
 * <pre>{@code
 * @RateLimited(value = "api", key = "principal", skipCondition = "header('X-Internal') == 'yes'")
 * @RateLimited(value = "big-exports", key = "principal", executeCondition = "#rows > 1000")
 * }</pre>
 *
 * <p>The key is a SpEL expression over the request (see {@link RateLimitRequest}:
 * {@code header('X-Api-Key')}, {@code remoteAddress}, {@code principal},
 * {@code pathVariable('id')}) with the method's arguments as variables ({@code #id},
 * {@code #order.customerId}). Without a key every caller shares one limit.
 *
 * <p>The annotation works through a Spring AOP proxy, as {@code @Transactional} does: a call from
 * another bean is limited, a call from a method of the same object ({@code this.report(c)}) does
 * not pass through the proxy and is not. Put the limited method on another bean, or call
 * {@link TallyRateLimits#enforce} in its body.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Repeatable(RateLimited.List.class)
public @interface RateLimited {

  /** The name of a rule in {@code tally.limits}; leave empty to give {@link #limits()} inline. */
  String value() default "";

  /**
   * Inline policies, when {@link #value()} is empty: {@code "token-bucket 10/1s"}, or with the id
   * the header fields name it by, {@code "burst=token-bucket 10/1s"}. Every one applies.
   */
  String[] limits() default {};

  /** The name of an inline rule (its policies' ids default to it); by default Class.method. */
  String name() default "";

  /** A SpEL expression for the key; empty means one limit shared by every caller. */
  String key() default "";

  /** Units each call takes; zero takes nothing and refuses the call when nothing is left. */
  long permits() default 1;

  /**
   * A SpEL expression over the same request and arguments as {@link #key()}: the annotation
   * applies to a call only when it is {@code true} (bucket4j's {@code executeCondition}). Empty:
   * every call.
   */
  String executeCondition() default "";

  /**
   * A SpEL expression over the same request and arguments as {@link #key()}: the annotation does
   * not apply to a call when it is {@code true} (bucket4j's {@code skipCondition}). Empty: none is
   * skipped.
   */
  String skipCondition() default "";

  /**
   * For an inline rule: {@code fail-open} (the default), {@code fail-closed} or {@code throw},
   * what the rule answers when the store cannot be reached. A named rule has its own.
   */
  String failurePolicy() default "";

  /** Holds repeated {@link RateLimited} annotations. */
  @Target(ElementType.METHOD)
  @Retention(RetentionPolicy.RUNTIME)
  @Documented
  @interface List {
    RateLimited[] value();
  }
}
