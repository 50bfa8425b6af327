package dev.tally.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Holds a permit of a concurrency limit while a method of a Spring bean runs: at most
 * {@link #maxPermits()} calls at once on one name (and key), across every thread, process and host
 * sharing the store. A call that gets no permit within {@link #maxWait()} does not run and throws
 * {@link ConcurrencyLimitExceededException}, which a web application answers {@code 429}.
 *
 * <pre>{@code
 * @PostMapping("/exports")
 * @ConcurrencyLimited(name = "exports", key = "principal", maxPermits = 3, leaseTtl = "5m")
 * Export export(...) {
 *   storage.write(file, ConcurrencyLeases.current().orElseThrow().fencingToken());
 * }
 * }</pre>
 *
 * <p>The permit is a lease ({@link dev.tally.Lease}) of {@link #leaseTtl()}, renewed every half
 * ttl while the call runs and released when it returns or throws (for a {@code CompletionStage},
 * when the stage completes). A process that dies holding one gives it back when its lease
 * expires; {@link ConcurrencyLeases#current()} gives the call its lease's fencing token, so a
 * resource can refuse a holder paused past its lease. The limit's store name is
 * {@code tally.key-prefix} + {@code concurrency:} + name, and {@code :} + key with a key.
 *
 * <p>As {@link RateLimited}, it works through a Spring AOP proxy: a call from another bean is
 * limited, a call from a method of the same object is not.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ConcurrencyLimited {

  /** The limit's name; calls of every method naming it share its permits. */
  String name();

  /**
   * A SpEL expression for the key, over the request and the method's arguments as for
   * {@link RateLimited#key()}: each key value is a limit of its own. Empty: one limit for the name.
   */
  String key() default "";

  /** The permits held at most at once: 1 or more. */
  long maxPermits();

  /** The permits one call holds: from 1 to {@link #maxPermits()}. */
  long weight() default 1;

  /**
   * How long a lease lasts unless renewed, as Spring Boot writes durations ({@code 30s},
   * {@code 5m}, {@code PT5M}): how long the permits of a process that dies holding them stay taken.
   */
  String leaseTtl() default "1m";

  /** How long a call waits for a permit before it is refused ({@code 0s}: not at all). */
  String maxWait() default "0s";

  /**
   * {@code fail-open} (the default: the call runs without a permit), {@code fail-closed} (it is
   * refused) or {@code throw} (the store's exception): what happens when the store cannot be reached.
   */
  String failurePolicy() default "";
}
