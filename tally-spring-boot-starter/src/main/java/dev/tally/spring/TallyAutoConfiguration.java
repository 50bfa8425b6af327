package dev.tally.spring;

import dev.tally.CircuitBreaker;
import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.Limit;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.TallyMetrics;
import dev.tally.TimeSource;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URLEncoder;
import java.time.Duration;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

/**
 * Opens one {@link Tally} from {@code tally.store} (closed when the context closes) and offers
 * its {@link Counters}, the named rate-limit rules ({@link TallyRateLimits}), {@link RateLimited},
 * the servlet or WebFlux rate-limit filter, an Actuator health indicator and Micrometer metrics.
 * Every bean backs off if the application declares its own of the same type.
 */
@AutoConfiguration
@EnableConfigurationProperties(TallyProperties.class)
public class TallyAutoConfiguration {
  private static final Log LOG = LogFactory.getLog(TallyAutoConfiguration.class);

  /**
   * The store, with every {@link TallyListener} bean told of fail-open and fail-closed answers
   * (Micrometer's among them when the application has a registry), on the application's
   * {@link TimeSource} bean if it has one.
   *
   * @throws IllegalArgumentException if tally.store is malformed or its module is missing
   * @throws StoreException if the store cannot be reached and tally.fail-on-startup-without-store
   *     is true (by default it starts without it, and calls answer by their failure policy)
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public Tally tally(TallyProperties properties, ObjectProvider<TallyListener> listeners,
      ObjectProvider<TimeSource> clock) {
    List<TallyListener> all = listeners.orderedStream().toList();
    Tally.Builder builder = Tally.builder(storeUri(properties));
    // A TimeSource bean (a test's manual clock) drives expiry and the limiters.
    TimeSource time = clock.getIfUnique();
    if (time != null) {
      builder.timeSource(time);
    }
    Tally tally = builder
        .failurePolicy(properties.getFailurePolicy() == null ? FailurePolicy.THROW : properties.getFailurePolicy())
        .listener(all.isEmpty() ? TallyListener.NONE : new CompositeListener(all))
        .circuitBreaker(circuitBreaker(properties.getCircuitBreaker()))
        .deferOpen(!properties.isFailOnStartupWithoutStore())
        .build();
    LOG.info(startupLine(tally, properties));
    return tally;
  }

  /**
   * tally.circuit-breaker as the core's settings.
   *
   * @throws IllegalArgumentException naming the property that is wrong
   */
  static CircuitBreaker circuitBreaker(TallyProperties.CircuitBreaker p) {
    if (!p.isEnabled()) {
      return CircuitBreaker.DISABLED;
    }
    if (p.getFailures() < 1) {
      throw new IllegalArgumentException("tally.circuit-breaker.failures must be 1 or more, not " + p.getFailures()
          + "; set tally.circuit-breaker.enabled=false for no breaker");
    }
    if (p.getCoolDown() == null || p.getCoolDown().isNegative() || p.getCoolDown().isZero()) {
      throw new IllegalArgumentException("tally.circuit-breaker.cool-down must be positive, e.g. 1s, not "
          + p.getCoolDown());
    }
    return CircuitBreaker.of(p.getFailures(), p.getCoolDown());
  }

  /** The one line about the store at startup: which, whether it answered, the breaker, the failure policies. */
  static String startupLine(Tally tally, TallyProperties p) {
    StringBuilder rules = new StringBuilder();
    p.getLimits().forEach((name, r) -> rules.append(rules.length() == 0 ? "" : ", ").append(name).append('=')
        .append(policyName(r.getFailurePolicy())));
    List<TallyProperties.FilterRule> filter = p.getFilter().getRules();
    for (int i = 0; i < filter.size(); i++) {
      TallyProperties.FilterRule r = filter.get(i);
      if (r.getRule() == null || r.getRule().isBlank()) {
        rules.append(rules.length() == 0 ? "" : ", ").append("filter-").append(i).append('=')
            .append(policyName(r.getFailurePolicy()));
      }
    }
    TallyProperties.CircuitBreaker b = p.getCircuitBreaker();
    return "Tally store " + TallyHealthIndicator.scheme(tally.uri()) + ": "
        + (tally.storeOpen() ? "opened" : "not reachable at startup, opened when it answers")
        + "; circuit breaker " + (b.isEnabled() ? "after " + b.getFailures() + " failures, cool-down "
            + b.getCoolDown().toMillis() + " ms" : "off")
        + "; counters on failure: " + policyName(p.getFailurePolicy())
        + "; rules on failure: " + (rules.length() == 0 ? "none defined" : rules);
  }

  private static String policyName(FailurePolicy policy) {
    return policy == null ? "throw" : policy.text();
  }

  /** The store's counters, with keys used as given and the failure policy of tally.failure-policy. */
  @Bean
  @ConditionalOnMissingBean
  public Counters tallyCounters(Tally tally) {
    return tally.counters();
  }

  /** The named rules of tally.limits, checked at startup. */
  @Bean
  @ConditionalOnMissingBean
  public TallyRateLimits tallyRateLimits(Tally tally, TallyProperties properties,
      ObjectProvider<TallyRateLimits.DecisionListener> listeners) {
    return new TallyRateLimits(tally, properties.getKeyPrefix(), TallyRateLimits.rules(properties),
        listeners.orderedStream().toList(), properties.isJointDecisions());
  }

  @Bean
  @ConditionalOnMissingBean
  KeyExpressions tallyKeyExpressions(BeanFactory beans) {
    return new KeyExpressions(beans);
  }

  /** Applies {@link RateLimited}; static, as a post-processor must be, and lazy about the store. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static AnnotatedMethodsPostProcessor tallyRateLimitedPostProcessor(ObjectProvider<TallyRateLimits> limits,
      ObjectProvider<KeyExpressions> expressions) {
    RateLimitedInterceptor interceptor = new RateLimitedInterceptor(limits::getObject, expressions::getObject);
    return new AnnotatedMethodsPostProcessor(RateLimited.class, RateLimitedInterceptor::annotated, interceptor::compile,
        interceptor);
  }

  /** Applies {@link ConcurrencyLimited}, as the post-processor of {@link RateLimited}. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static AnnotatedMethodsPostProcessor tallyConcurrencyLimitedPostProcessor(ObjectProvider<Tally> tally,
      ObjectProvider<KeyExpressions> expressions, Environment environment) {
    // A post-processor is made before properties are bound: the prefix is read as the binder would.
    String prefix = environment.getProperty("tally.key-prefix", TallyProperties.DEFAULT_KEY_PREFIX);
    ConcurrencyLimitedInterceptor interceptor =
        new ConcurrencyLimitedInterceptor(tally::getObject, expressions::getObject, prefix);
    return new AnnotatedMethodsPostProcessor(ConcurrencyLimited.class, ConcurrencyLimitedInterceptor::annotated,
        interceptor::compile, interceptor);
  }

  /** The store URI with {@code tally.store-options} added as query parameters. */
  static String storeUri(TallyProperties properties) {
    String uri = properties.getStore();
    if (uri == null || uri.isBlank()) {
      throw new IllegalArgumentException("tally.store is empty; try mem:, file:./tally-data or"
          + " redis://localhost:6379");
    }
    StringBuilder b = new StringBuilder(uri.strip());
    for (Map.Entry<String, String> e : properties.getStoreOptions().entrySet()) {
      b.append(b.indexOf("?") < 0 ? '?' : '&')
          .append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
          .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
    }
    return b.toString();
  }

  /** Micrometer, when the application has a registry: decisions and failure-policy answers. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  static class Metrics {
    @Bean
    TallyListener tallyMetricsListener(ObjectProvider<MeterRegistry> registry, TallyProperties properties) {
      MeterRegistry r = registry.getIfUnique();
      return r == null ? TallyListener.NONE : TallyMetrics.of(r, properties.getStore());
    }

    @Bean
    TallyRateLimits.DecisionListener tallyDecisionMetrics(ObjectProvider<MeterRegistry> registry) {
      MeterRegistry r = registry.getIfUnique();
      return r == null ? (rule, policy, d) -> { } : new MicrometerDecisionMetrics(r);
    }
  }

  /** The store's health, as the health contributor {@code tally}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  @ConditionalOnEnabledHealthIndicator("tally")
  static class Health {
    @Bean
    @ConditionalOnMissingBean(name = "tallyHealthIndicator")
    TallyHealthIndicator tallyHealthIndicator(Tally tally, TallyProperties properties) {
      return new TallyHealthIndicator(tally, properties.getHealth().getOutageStatus(), everyRuleFailsClosed(properties));
    }
  }

  /** The servlet filter and the 429 answer of {@link RateLimitExceededException}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass(name = {"jakarta.servlet.Filter", "org.springframework.web.filter.OncePerRequestFilter"})
  static class Servlet {
    @Bean
    @ConditionalOnMissingBean
    RateLimitExceptionHandlers.Servlet tallyRateLimitExceptionHandler() {
      return new RateLimitExceptionHandlers.Servlet();
    }

    @Bean
    @ConditionalOnMissingBean(name = "tallyRateLimitFilter")
    @ConditionalOnProperty(prefix = "tally.filter", name = "enabled", matchIfMissing = true)
    FilterRegistrationBean<ServletRateLimitFilter> tallyRateLimitFilter(TallyProperties properties,
        TallyRateLimits limits, KeyExpressions expressions) {
      FilterRules rules = FilterRules.of(properties.getFilter(), limits, expressions);
      FilterRegistrationBean<ServletRateLimitFilter> registration =
          new FilterRegistrationBean<>(new ServletRateLimitFilter(rules, limits));
      registration.setName("tallyRateLimitFilter");
      registration.setOrder(properties.getFilter().getOrder());
      return registration;
    }
  }

  /** The WebFlux filter and the 429 answer of {@link RateLimitExceededException}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass(name = "org.springframework.web.server.WebFilter")
  static class Reactive {
    @Bean
    @ConditionalOnMissingBean
    RateLimitExceptionHandlers.Reactive tallyRateLimitExceptionHandler() {
      return new RateLimitExceptionHandlers.Reactive();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "tally.filter", name = "enabled", matchIfMissing = true)
    ReactiveRateLimitFilter tallyRateLimitFilter(TallyProperties properties, TallyRateLimits limits,
        KeyExpressions expressions) {
      FilterRules rules = FilterRules.of(properties.getFilter(), limits, expressions);
      return new ReactiveRateLimitFilter(rules, limits, properties.getFilter().getOrder());
    }
  }

  /** Whether there are rules and each refuses when the store fails: an outage then refuses every limited request. */
  static boolean everyRuleFailsClosed(TallyProperties p) {
    List<FailurePolicy> policies = new java.util.ArrayList<>();
    p.getLimits().values().forEach(r -> policies.add(r.getFailurePolicy()));
    for (TallyProperties.FilterRule r : p.getFilter().getRules()) {
      if (r.getRule() == null || r.getRule().isBlank()) {
        policies.add(r.getFailurePolicy());
      }
    }
    return !policies.isEmpty() && policies.stream().allMatch(f -> f == FailurePolicy.FAIL_CLOSED);
  }

  /** Tells every listener, each shielded from the others. */
  private static final class CompositeListener implements TallyListener {
    private final List<TallyListener> listeners;

    CompositeListener(List<TallyListener> listeners) {
      this.listeners = List.copyOf(listeners);
    }

    @Override
    public void onFailurePolicyApplied(String operation, String key, FailurePolicy policy, StoreException cause) {
      for (TallyListener l : listeners) {
        l.onFailurePolicyApplied(operation, key, policy, cause);
      }
    }

    @Override
    public void onLocalDenial(String key) {
      for (TallyListener l : listeners) {
        l.onLocalDenial(key);
      }
    }

    @Override
    public void onCircuitOpened(String store, Throwable cause, Duration openFor) {
      for (TallyListener l : listeners) {
        l.onCircuitOpened(store, cause, openFor);
      }
    }

    @Override
    public void onCircuitClosed(String store) {
      for (TallyListener l : listeners) {
        l.onCircuitClosed(store);
      }
    }

    @Override
    public void onCircuitRejected(String store) {
      for (TallyListener l : listeners) {
        l.onCircuitRejected(store);
      }
    }

    @Override
    public void onLimitsMismatch(String key, Decision.Mismatch mismatch, List<Limit> limits, long version,
        long storedVersion) {
      for (TallyListener l : listeners) {
        l.onLimitsMismatch(key, mismatch, limits, version, storedVersion);
      }
    }
  }
}
