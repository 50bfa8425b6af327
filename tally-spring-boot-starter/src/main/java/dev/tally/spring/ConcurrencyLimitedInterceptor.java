package dev.tally.spring;

import dev.tally.ConcurrencyLimit;
import dev.tally.FailurePolicy;
import dev.tally.Lease;
import dev.tally.StoreException;
import dev.tally.Tally;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * Applies {@link ConcurrencyLimited}: a lease before the call, renewed every half ttl while it
 * runs, released when it ends. Each method's annotation is read and checked once, at startup.
 */
final class ConcurrencyLimitedInterceptor implements MethodInterceptor {
  private static final System.Logger LOG = System.getLogger(ConcurrencyLimitedInterceptor.class.getName());
  /** Renews the leases of calls still running: one daemon thread, renewals are one store call each. */
  private static final ScheduledExecutorService RENEWALS = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "tally-lease-renewals");
    t.setDaemon(true);
    return t;
  });

  private final Supplier<Tally> tallySupplier;
  private final Supplier<KeyExpressions> expressionsSupplier;
  private final String keyPrefix;
  private final Map<Method, Compiled> compiled = new ConcurrentHashMap<>();
  private volatile Tally tally;
  private volatile KeyExpressions expressions;

  /** The store and expressions are looked up on first use, as {@link RateLimitedInterceptor} does. */
  ConcurrencyLimitedInterceptor(Supplier<Tally> tally, Supplier<KeyExpressions> expressions, String keyPrefix) {
    this.tallySupplier = tally;
    this.expressionsSupplier = expressions;
    this.keyPrefix = keyPrefix;
  }

  private Tally tally() {
    Tally t = tally;
    if (t == null) {
      tally = t = tallySupplier.get();
    }
    return t;
  }

  private KeyExpressions expressions() {
    KeyExpressions e = expressions;
    if (e == null) {
      expressions = e = expressionsSupplier.get();
    }
    return e;
  }

  /** One annotation, read and checked. */
  private record Compiled(ConcurrencyLimited annotation, String name, Duration ttl, Duration maxWait,
      FailurePolicy policy, boolean async) {}

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Object target = invocation.getThis();
    Method method = target == null ? invocation.getMethod()
        : AopUtils.getMostSpecificMethod(invocation.getMethod(), target.getClass());
    Compiled c = compile(method);
    ConcurrencyLimited a = c.annotation();
    String name = c.name() + (a.key().isEmpty() ? ""
        : ":" + expressions().evaluate(a.key(), WebRequests.current(), method, invocation.getArguments()));
    Optional<Lease> got;
    try {
      ConcurrencyLimit limit = tally().concurrency(name, a.maxPermits());
      got = c.maxWait().isZero() ? limit.tryAcquire(a.weight(), c.ttl())
          : limit.acquire(a.weight(), c.ttl(), c.maxWait());
    } catch (StoreException e) {
      switch (c.policy()) {
        case FAIL_OPEN -> {
          LOG.log(System.Logger.Level.WARNING, "concurrency limit ''{0}'': the store failed ({1}); the call runs"
              + " without a permit (fail-open)", name, e.getMessage());
          return invocation.proceed();
        }
        case FAIL_CLOSED -> throw new ConcurrencyLimitExceededException(name, a.maxPermits(), true,
            "the store is unavailable, and the concurrency limit '" + name + "' refuses calls until it answers"
                + " (failure-policy fail-closed)");
        default -> throw e;
      }
    }
    if (got.isEmpty()) {
      throw new ConcurrencyLimitExceededException(name, a.maxPermits(), false, "all " + a.maxPermits()
          + " permits of the concurrency limit '" + name + "' are held" + (c.maxWait().isZero() ? ""
          : " and none came free within " + DurationStyle.SIMPLE.print(c.maxWait())));
    }
    return holding(got.get(), c, invocation);
  }

  /** Runs the call holding {@code lease}: renewed while it runs, released when it ends. */
  private static Object holding(Lease lease, Compiled c, MethodInvocation invocation) throws Throwable {
    long every = Math.max(1, c.ttl().toMillis() / 2);
    ScheduledFuture<?> renewal = RENEWALS.scheduleAtFixedRate(() -> renew(lease, c.ttl()), every, every,
        TimeUnit.MILLISECONDS);
    Runnable end = () -> {
      renewal.cancel(false);
      release(lease);
    };
    boolean ended = true;
    ConcurrencyLeases.push(lease);
    try {
      Object result = invocation.proceed();
      if (c.async() && result instanceof CompletionStage<?> stage) {
        ended = false; // the work goes on after the call returns
        stage.whenComplete((v, failure) -> end.run());
      }
      return result;
    } finally {
      ConcurrencyLeases.pop();
      if (ended) {
        end.run();
      }
    }
  }

  private static void renew(Lease lease, Duration ttl) {
    try {
      if (!lease.renew(ttl)) {
        LOG.log(System.Logger.Level.WARNING, "lease {0} expired before it was renewed: its permit may be held by"
            + " another call now; the resource's fencing token check is what stops this one", lease.id());
        throw new IllegalStateException("lease gone"); // ends the schedule
      }
    } catch (StoreException e) {
      LOG.log(System.Logger.Level.WARNING, "lease {0} not renewed ({1}); will try again", lease.id(), e.getMessage());
    }
  }

  private static void release(Lease lease) {
    try {
      lease.release();
    } catch (StoreException e) {
      LOG.log(System.Logger.Level.WARNING, "lease {0} not released ({1}); its permit comes back when it expires",
          lease.id(), e.getMessage());
    }
  }

  /** Whether {@code method} carries the annotation (the pointcut asks). */
  static boolean annotated(Method method) {
    return AnnotatedElementUtils.hasAnnotation(method, ConcurrencyLimited.class);
  }

  /**
   * Reads and checks the annotation of {@code method}.
   *
   * @throws IllegalArgumentException naming the method and what is wrong
   */
  Compiled compile(Method method) {
    return compiled.computeIfAbsent(method, this::read);
  }

  private Compiled read(Method method) {
    ConcurrencyLimited a = AnnotatedElementUtils.findMergedAnnotation(method, ConcurrencyLimited.class);
    String where = "@ConcurrencyLimited on " + method.getDeclaringClass().getName() + "." + method.getName();
    if (a == null) {
      throw new IllegalArgumentException(where + ": no annotation");
    }
    if (a.name().isBlank()) {
      throw new IllegalArgumentException(where + ": name the limit, e.g. name = \"exports\"");
    }
    if (a.maxPermits() < 1) {
      throw new IllegalArgumentException(where + ": maxPermits must be 1 or more, not " + a.maxPermits());
    }
    if (a.weight() < 1 || a.weight() > a.maxPermits()) {
      throw new IllegalArgumentException(where + ": weight must be from 1 to maxPermits (" + a.maxPermits()
          + "), not " + a.weight());
    }
    if (publishes(method.getReturnType())) {
      throw new IllegalArgumentException(where + ": a method returning a " + method.getReturnType().getSimpleName()
          + " runs its work after it returns, when it is subscribed to; limit the method that does the work,"
          + " or return a CompletionStage");
    }
    if (!a.key().isEmpty()) {
      expressions().parse(a.key(), where);
    }
    Duration ttl = duration(a.leaseTtl(), where + ": leaseTtl");
    Duration maxWait = duration(a.maxWait(), where + ": maxWait");
    if (ttl.isZero()) {
      throw new IllegalArgumentException(where + ": leaseTtl must be positive");
    }
    return new Compiled(a, keyPrefix + "concurrency:" + a.name(), ttl, maxWait, failurePolicy(a.failurePolicy(), where),
        CompletionStage.class.isAssignableFrom(method.getReturnType()));
  }

  /** Whether {@code type} is a Reactive Streams publisher (Mono, Flux), named: the library may be absent. */
  private static boolean publishes(Class<?> type) {
    String publisher = "org.reactivestreams.Publisher";
    return type.getName().equals(publisher)
        || ClassUtils.getAllInterfacesForClassAsSet(type).stream().anyMatch(i -> i.getName().equals(publisher));
  }

  private static Duration duration(String text, String where) {
    try {
      Duration d = DurationStyle.detectAndParse(text.strip());
      if (d.isNegative()) {
        throw new IllegalArgumentException("negative");
      }
      return d;
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": '" + text + "' is not a duration like 30s, 5m or PT5M");
    }
  }

  private static FailurePolicy failurePolicy(String text, String where) {
    try {
      return text.isEmpty() ? FailurePolicy.FAIL_OPEN : FailurePolicy.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": failurePolicy " + e.getMessage(), e);
    }
  }

}
