package dev.tally.spring;

import dev.tally.FailurePolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code tally.*} properties: which store to open, the named rate-limit rules, and the rules
 * of the servlet and WebFlux filters.
 *
 * <pre>
 * tally.store=redis://localhost:6379
 * tally.limits.api.limit=token-bucket 100/1m
 * tally.filter.rules[0].paths=/api/**
 * tally.filter.rules[0].key=header:X-Api-Key
 * tally.filter.rules[0].rule=api
 * </pre>
 */
// Unknown tally.* properties fail startup, naming the property: a misspelt or unsupported
// setting that silently does nothing is worse than one that stops the application.
@ConfigurationProperties(prefix = "tally", ignoreUnknownFields = false)
public class TallyProperties {
  /**
   * The store to open: mem:, file:./tally-data, redis://host:6379/0, rediss://...,
   * redis-cluster://h1:7000,h2:7001, dynamodb://table?region=... (each needs its module on the
   * class path; file: comes with the starter).
   */
  private String store = "file:./tally-data";

  /**
   * Options added to the store URI as query parameters, e.g. timeout=2s for Redis or sync=always
   * for the file store.
   */
  private Map<String, String> storeOptions = new LinkedHashMap<>();

  /**
   * What counters do when the store fails: throw (the default), fail-open (answer default + delta).
   * Rate-limit rules have their own failure-policy.
   */
  private FailurePolicy failurePolicy = FailurePolicy.THROW;

  /**
   * Prefix of every limiter key the starter's rules create: PREFIX + rule + ':' + policy + ':' +
   * key.
   */
  /** The default of {@code tally.key-prefix}. */
  static final String DEFAULT_KEY_PREFIX = "rl:";

  private String keyPrefix = DEFAULT_KEY_PREFIX;

  /** Named rate-limit rules, used by @RateLimited("name") and by filter rules. */
  private Map<String, Rule> limits = new LinkedHashMap<>();

  /** The rate-limit filter (servlet or WebFlux, whichever the application is). */
  private Filter filter = new Filter();

  /** The store's circuit breaker: on by default, so an outage is answered at once by policy. */
  private CircuitBreaker circuitBreaker = new CircuitBreaker();

  /**
   * Whether the application fails to start when the store cannot be reached. By default it
   * starts, and calls answer by their failure policy until the store answers.
   */
  private boolean failOnStartupWithoutStore;

  /** The tally health indicator. */
  private Health health = new Health();

  /**
   * Whether the policies one request is checked against (every policy of the filter rules that
   * match it, of the {@link dev.tally.spring.RateLimited} annotations of one method, of one
   * {@code check}) are decided as one joint decision ({@code Tally.decide}): a refused request
   * takes nothing from any of them, instead of units taken in turn and given back. On Redis
   * Cluster every key must then share a hash slot: give {@code key-prefix} a hash tag.
   */
  private boolean jointDecisions;

  public boolean isJointDecisions() {
    return jointDecisions;
  }

  public void setJointDecisions(boolean jointDecisions) {
    this.jointDecisions = jointDecisions;
  }

  public String getStore() {
    return store;
  }

  public void setStore(String store) {
    this.store = store;
  }

  public Map<String, String> getStoreOptions() {
    return storeOptions;
  }

  public void setStoreOptions(Map<String, String> storeOptions) {
    this.storeOptions = storeOptions;
  }

  public FailurePolicy getFailurePolicy() {
    return failurePolicy;
  }

  public void setFailurePolicy(FailurePolicy failurePolicy) {
    this.failurePolicy = failurePolicy;
  }

  public String getKeyPrefix() {
    return keyPrefix;
  }

  public void setKeyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
  }

  public Map<String, Rule> getLimits() {
    return limits;
  }

  public void setLimits(Map<String, Rule> limits) {
    this.limits = limits;
  }

  public Filter getFilter() {
    return filter;
  }

  public void setFilter(Filter filter) {
    this.filter = filter;
  }

  public CircuitBreaker getCircuitBreaker() {
    return circuitBreaker;
  }

  public void setCircuitBreaker(CircuitBreaker circuitBreaker) {
    this.circuitBreaker = circuitBreaker;
  }

  public boolean isFailOnStartupWithoutStore() {
    return failOnStartupWithoutStore;
  }

  public void setFailOnStartupWithoutStore(boolean failOnStartupWithoutStore) {
    this.failOnStartupWithoutStore = failOnStartupWithoutStore;
  }

  public Health getHealth() {
    return health;
  }

  public void setHealth(Health health) {
    this.health = health;
  }

  /** The circuit breaker's settings (dev.tally.CircuitBreaker). */
  public static class CircuitBreaker {
    /** Whether the breaker is on. */
    private boolean enabled = true;

    /** Consecutive store failures or timeouts that open the circuit. */
    private int failures = 5;

    /** How long the circuit stays open before it probes the store in the background. */
    private java.time.Duration coolDown = java.time.Duration.ofSeconds(1);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public int getFailures() {
      return failures;
    }

    public void setFailures(int failures) {
      this.failures = failures;
    }

    public java.time.Duration getCoolDown() {
      return coolDown;
    }

    public void setCoolDown(java.time.Duration coolDown) {
      this.coolDown = coolDown;
    }
  }

  /** How the tally health indicator reports a store outage. */
  public static class Health {
    /**
     * The status of the tally indicator while the store does not answer: UNKNOWN by default,
     * which leaves the overall status UP (the rules answer by their failure policy), or DOWN, or
     * any other status code. DOWN regardless when every rule is fail-closed, since then every
     * limited request is refused.
     */
    private String outageStatus = "UNKNOWN";

    public String getOutageStatus() {
      return outageStatus;
    }

    public void setOutageStatus(String outageStatus) {
      this.outageStatus = outageStatus;
    }
  }

  /** A rate-limit rule: one or more policies and what to do when the store fails. */
  public static class Rule {
    /**
     * The rule's one policy, named after the rule, e.g. token-bucket 100/1m, gcra 15:30/60s,
     * fixed-window 1000/1h, sliding-window 1000/1h, leaky-bucket 100/1m, quota 1000/month@UTC.
     */
    private String limit;

    /**
     * Several policies by id, each in the form of limit (e.g. minute=token-bucket 100/1m,
     * second=token-bucket 10/1s): a request passes only if every one allows it.
     */
    private Map<String, String> policies = new LinkedHashMap<>();

    /**
     * What the rule answers when the store cannot be reached: fail-open (allow, the default),
     * fail-closed (deny) or throw (an error response).
     */
    private FailurePolicy failurePolicy = FailurePolicy.FAIL_OPEN;

    /**
     * The version of the rule's limits: raise it with every change of them, and a key's stored
     * limits move to the new ones on its next request, keeping what was consumed, while instances
     * still on an older version apply the stored newer ones. 0 (the default) never replaces
     * stored limits.
     */
    private long version;

    public long getVersion() {
      return version;
    }

    public void setVersion(long version) {
      this.version = version;
    }

    public String getLimit() {
      return limit;
    }

    public void setLimit(String limit) {
      this.limit = limit;
    }

    public Map<String, String> getPolicies() {
      return policies;
    }

    public void setPolicies(Map<String, String> policies) {
      this.policies = policies;
    }

    public FailurePolicy getFailurePolicy() {
      return failurePolicy;
    }

    public void setFailurePolicy(FailurePolicy failurePolicy) {
      this.failurePolicy = failurePolicy;
    }
  }

  /** The rate-limit filter's settings. */
  public static class Filter {
    /** Whether the filter is installed (it does nothing without rules). */
    private boolean enabled = true;

    /**
     * The filter's order among the application's filters; by default -50, just after Spring
     * Security's (-100), so that a principal key sees the authenticated user.
     */
    private int order = -50;

    /**
     * The rules, tried in order: every rule whose paths and methods match a request applies to
     * it.
     */
    private List<FilterRule> rules = new ArrayList<>();

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public int getOrder() {
      return order;
    }

    public void setOrder(int order) {
      this.order = order;
    }

    public List<FilterRule> getRules() {
      return rules;
    }

    public void setRules(List<FilterRule> rules) {
      this.rules = rules;
    }
  }

  /** Which requests a filter rule limits, by what key, with which limits. */
  public static class FilterRule extends Rule {
    /**
     * Path patterns the rule applies to (Spring's PathPattern syntax: /api/**,
     * /users/{id}/orders); none means every path.
     */
    private List<String> paths = new ArrayList<>();

    /** HTTP methods the rule applies to, e.g. GET, POST; none means every method. */
    private List<String> methods = new ArrayList<>();

    /**
     * What a request is limited by: remote-address (the default), principal, header:NAME,
     * path-variable:NAME (from the matching path pattern), global (one limit for all), or
     * expression:SPEL over the request (header('X-Api-Key'), remoteAddress, principal,
     * pathVariable('id'), method, path).
     */
    private String key = "remote-address";

    /**
     * The named rule of tally.limits to apply; without it, the rule's own limit or policies
     * apply.
     */
    private String rule;

    /** Units each request takes; zero takes nothing and refuses the request when nothing is left. */
    private long permits = 1;

    public List<String> getPaths() {
      return paths;
    }

    public void setPaths(List<String> paths) {
      this.paths = paths;
    }

    public List<String> getMethods() {
      return methods;
    }

    public void setMethods(List<String> methods) {
      this.methods = methods;
    }

    public String getKey() {
      return key;
    }

    public void setKey(String key) {
      this.key = key;
    }

    public String getRule() {
      return rule;
    }

    public void setRule(String rule) {
      this.rule = rule;
    }

    public long getPermits() {
      return permits;
    }

    public void setPermits(long permits) {
      this.permits = permits;
    }

    // Conditions, plans and post-execution cost (docs/spring-boot.md, "Conditions, plans and
    // post-execution cost"), named as bucket4j-spring-boot-starter names them where it has them.

    /**
     * SpEL over the request (header('X-Api-Key'), #request.getHeader(...), principal, path,
     * parameter('p'), @bean.method()): the rule applies only when it is true.
     */
    private String executeCondition;

    /** SpEL over the request, like execute-condition: the rule does not apply when it is true. */
    private String skipCondition;

    /**
     * Predicates that must all match for the rule to apply: PATH=/api/**,/admin, METHOD=GET,POST,
     * QUERY=param (present), HEADER=name (present) or HEADER=name,regex (a value matches).
     */
    private List<String> executePredicates = new ArrayList<>();

    /** Predicates (as execute-predicates) that, when all match, skip the rule. */
    private List<String> skipPredicates = new ArrayList<>();

    /**
     * SpEL over the request choosing the plan whose limits apply, by name, e.g.
     * "@accounts.planOf(principal) ?: 'free'". Needs plans.
     */
    private String plan;

    /** The plans by name, each with its limit or policies (and failure-policy). Needs plan. */
    private Map<String, Rule> plans = new LinkedHashMap<>();

    /**
     * The plan applied when the plan expression gives null or a name not in plans; by default the
     * first plan listed.
     */
    private String defaultPlan;

    /**
     * SpEL over the response (getStatus(), header('X-Tokens'); the request is #request): the
     * units reserved before the request are given back after it unless this is true, e.g.
     * "getStatus() == 401" to count failed logins only.
     */
    private String postExecuteCondition;

    /**
     * Response statuses that count, e.g. 401 or 401,403: the units reserved before the request
     * are given back after any other status. The short form of post-execute-condition.
     */
    private List<Integer> chargeOnStatus = new ArrayList<>();

    /**
     * SpEL over the response giving the units the request costs once answered, e.g.
     * "header('X-Tokens-Used')": the permits reserved before the request are settled at it after
     * the response, the surplus given back or the excess taken into the limiter's debt, which
     * delays later requests.
     */
    private String postExecuteCost;

    /**
     * How long a rule charged after the response (post-execute-cost, post-execute-condition or
     * charge-on-status) holds its reservation: one not settled by then (the application stopped
     * mid-request) is settled at its estimate, the permits. Longer than the slowest request; at
     * most the store's operation-id retention, an hour.
     */
    private java.time.Duration reservationTtl;

    public String getExecuteCondition() {
      return executeCondition;
    }

    public void setExecuteCondition(String executeCondition) {
      this.executeCondition = executeCondition;
    }

    public String getSkipCondition() {
      return skipCondition;
    }

    public void setSkipCondition(String skipCondition) {
      this.skipCondition = skipCondition;
    }

    public List<String> getExecutePredicates() {
      return executePredicates;
    }

    public void setExecutePredicates(List<String> executePredicates) {
      this.executePredicates = executePredicates;
    }

    public List<String> getSkipPredicates() {
      return skipPredicates;
    }

    public void setSkipPredicates(List<String> skipPredicates) {
      this.skipPredicates = skipPredicates;
    }

    public String getPlan() {
      return plan;
    }

    public void setPlan(String plan) {
      this.plan = plan;
    }

    public Map<String, Rule> getPlans() {
      return plans;
    }

    public void setPlans(Map<String, Rule> plans) {
      this.plans = plans;
    }

    public String getDefaultPlan() {
      return defaultPlan;
    }

    public void setDefaultPlan(String defaultPlan) {
      this.defaultPlan = defaultPlan;
    }

    public String getPostExecuteCondition() {
      return postExecuteCondition;
    }

    public void setPostExecuteCondition(String postExecuteCondition) {
      this.postExecuteCondition = postExecuteCondition;
    }

    public List<Integer> getChargeOnStatus() {
      return chargeOnStatus;
    }

    public void setChargeOnStatus(List<Integer> chargeOnStatus) {
      this.chargeOnStatus = chargeOnStatus;
    }

    public String getPostExecuteCost() {
      return postExecuteCost;
    }

    public void setPostExecuteCost(String postExecuteCost) {
      this.postExecuteCost = postExecuteCost;
    }

    public java.time.Duration getReservationTtl() {
      return reservationTtl;
    }

    public void setReservationTtl(java.time.Duration reservationTtl) {
      this.reservationTtl = reservationTtl;
    }
  }
}
