package dev.tally.spring;

import dev.tally.Decision;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * The application's named rate-limit rules ({@code tally.limits.*}), applied to keys: what
 * {@link RateLimited} and the filters use, and what code can call directly.
 *
 * <pre>{@code
 * @Autowired TallyRateLimits limits;
 *
 * RateLimitVerdict v = limits.check("api", user.id());
 * if (!v.allowed()) { ... v.retryAfterSeconds() ... }
 * limits.enforce("exports", user.id(), rows);  // throws RateLimitExceededException, answered 429
 * }</pre>
 *
 * <p>Each policy of a rule is its own limiter, named {@code PREFIX + rule + ":" + policy + ":" +
 * key}, so that each reports its own remaining units and reset. A request takes its units from
 * every policy in turn; if one denies, the policies after it are only read ({@code decide(0)})
 * and the units already taken from those before it are given back. So no policy ever grants more
 * than its limit, and a request denied by one policy costs no other; two concurrent requests
 * may, for an instant, see units that one of them is about to give back as taken.
 *
 * <p>With {@code tally.joint-decisions}, a request's policies are instead decided as one joint
 * decision ({@link Tally#decide}): all take their units or none does, so nothing is ever taken to
 * be given back. A check of zero permits (a peek, refused when nothing is left) and one whose
 * targets take different permits or name one limiter twice are decided in turn, as above.
 */
public class TallyRateLimits {
  /** Keys longer than this (in UTF-8 bytes) are replaced by their SHA-256, to stay well inside Tally's 1024. */
  static final int MAX_KEY_BYTES = 512;
  /** The key of a request that has none (no such header, no principal). */
  static final String ANONYMOUS = "anonymous";

  private final Tally tally;
  private final String prefix;
  private final Map<String, Rule> rules;
  private final List<DecisionListener> listeners;
  private final boolean joint;

  TallyRateLimits(Tally tally, String prefix, Map<String, Rule> rules, List<DecisionListener> listeners) {
    this(tally, prefix, rules, listeners, false);
  }

  /**
   * @param joint whether a request's policies are decided as one joint decision
   * @throws IllegalArgumentException for joint decisions on Redis Cluster without a hash tag in
   *     the prefix: their keys would hash to several slots, and every such request would fail
   */
  TallyRateLimits(Tally tally, String prefix, Map<String, Rule> rules, List<DecisionListener> listeners,
      boolean joint) {
    this.tally = Objects.requireNonNull(tally, "tally");
    this.prefix = prefix == null ? "" : prefix;
    this.rules = Map.copyOf(rules);
    this.listeners = List.copyOf(listeners);
    this.joint = joint;
    String uri = tally.uri();
    if (joint && (uri.startsWith("redis-cluster:") || uri.startsWith("rediss-cluster:"))
        && !this.prefix.matches("[^{]*\\{[^}]+}.*")) {
      throw new IllegalArgumentException("tally.joint-decisions on Redis Cluster needs every key of a"
          + " request in one hash slot: give tally.key-prefix a hash tag (e.g. '{rl}:', which puts"
          + " every limiter on one node), or leave joint decisions off");
    }
  }

  /** Builds the named rules from properties, failing at startup on any bad one. */
  static Map<String, Rule> rules(TallyProperties properties) {
    Map<String, Rule> rules = new LinkedHashMap<>();
    properties.getLimits().forEach((name, p) -> {
      if (!Policy.ID.matcher(name).matches()) {
        throw new IllegalArgumentException("tally.limits." + name + ": a rule name must be 1 to 64"
            + " letters, digits or . _ : -");
      }
      rules.put(name, Rule.of(name, p, "tally.limits." + name));
    });
    return rules;
  }

  /** The names of the configured rules. */
  public Set<String> ruleNames() {
    return new TreeSet<>(rules.keySet());
  }

  /**
   * Takes one unit for {@code key} from every policy of the rule {@code rule}.
   *
   * @throws IllegalArgumentException if there is no such rule
   * @throws dev.tally.StoreException if the store fails and the rule's failure policy is THROW
   */
  public RateLimitVerdict check(String rule, String key) {
    return check(rule, key, 1);
  }

  /**
   * Takes {@code permits} units for {@code key} from every policy of the rule {@code rule}, or
   * none if one denies. Zero permits takes nothing and is refused when a policy has nothing left
   * (see {@link #peek}).
   *
   * @throws IllegalArgumentException if there is no such rule or permits is negative
   */
  public RateLimitVerdict check(String rule, String key, long permits) {
    return check(List.of(new Target(rule(rule), key, permits)));
  }

  /**
   * Whether {@code key} has a unit left in every policy of the rule {@code rule}, taking nothing:
   * {@code check(rule, key, 0)}. Refused, with the wait, when a policy has nothing left.
   *
   * @throws IllegalArgumentException if there is no such rule
   */
  public RateLimitVerdict peek(String rule, String key) {
    return check(rule, key, 0);
  }

  /**
   * {@link #check(String, String, long)}, throwing if denied.
   *
   * @throws RateLimitExceededException if a policy denied: the web layer answers it with 429
   */
  public void enforce(String rule, String key, long permits) {
    RateLimitVerdict v = check(rule, key, permits);
    if (!v.allowed()) {
      throw new RateLimitExceededException(v);
    }
  }

  /**
   * The limiter of a one-policy rule for {@code key}, with the rule's failure policy: the same
   * state the filters and {@link RateLimited} use, for code that wants the whole
   * {@link RateLimiter} API (acquire with a wait, refund, available).
   *
   * @throws IllegalArgumentException if there is no such rule, or it has several policies (use
   *     {@link #check})
   */
  public RateLimiter limiter(String rule, String key) {
    Rule r = rule(rule);
    if (r.policies().size() != 1) {
      throw new IllegalArgumentException("rule '" + rule + "' has " + r.policies().size()
          + " policies, each its own limiter; use check(rule, key, permits) to apply them together");
    }
    Policy p = r.policies().get(0);
    return tally.limiter(limiterName(r, p, key(key)), p.limit()).withVersion(r.version())
        .withFailurePolicy(r.failurePolicy());
  }

  Rule rule(String name) {
    Rule r = rules.get(name);
    if (r == null) {
      throw new IllegalArgumentException("no rate-limit rule '" + name + "': define tally.limits."
          + name + ".limit (rules defined: " + ruleNames() + ")");
    }
    return r;
  }

  boolean hasRule(String name) {
    return rules.containsKey(name);
  }

  /** One rule applied to one key for one request. */
  record Target(Rule rule, String key, long permits) {
    Target {
      Objects.requireNonNull(rule, "rule");
      if (permits < 0) {
        throw new IllegalArgumentException("permits must be zero or more, not " + permits);
      }
    }
  }

  /** Applies every target's policies in order; see the class comment for how a denial unwinds. */
  RateLimitVerdict check(List<Target> targets) {
    Instant now = Instant.ofEpochSecond(0, tally.timeSource().nanos());
    if (joint) {
      RateLimitVerdict v = jointly(targets, now);
      if (v != null) {
        return v;
      }
    }
    List<PolicyOutcome> outcomes = new ArrayList<>();
    List<Integer> granted = new ArrayList<>();
    List<RateLimiter> grantedLimiters = new ArrayList<>();
    boolean denied = false;
    for (Target t : targets) {
      String key = key(t.key());
      for (Policy p : t.rule().policies()) {
        String name = limiterName(t.rule(), p, key);
        RateLimiter limiter = tally.limiter(name, p.limit()).withVersion(t.rule().version())
            .withFailurePolicy(t.rule().failurePolicy());
        // Zero permits asks "is anything left?": a peek, refused when nothing is (decide(0) always allows).
        Decision d = denied ? limiter.decide(0) : t.permits() == 0 ? limiter.peek() : limiter.decide(t.permits());
        if (!denied) {
          for (DecisionListener l : listeners) {
            l.onDecision(t.rule().name(), p.id(), d);
          }
          if (d.allowed()) {
            granted.add(outcomes.size());
            grantedLimiters.add(limiter);
          } else {
            denied = true;
          }
        }
        outcomes.add(new PolicyOutcome(t.rule().name(), p.id(), key, name, t.permits(), d,
            p.windowSeconds(now)));
      }
    }
    if (denied) {
      for (int i = 0; i < granted.size(); i++) {
        int at = granted.get(i);
        PolicyOutcome o = outcomes.get(at);
        // A fail-open grant took nothing from a store that did not answer: nothing to give back.
        if (o.permits() > 0 && !o.decision().storeFailed()) {
          grantedLimiters.get(i).refund(o.permits());
          Decision d = o.decision();
          Decision back = new Decision(true, Math.min(d.limit(), d.remaining() + o.permits()), d.limit(), 0,
              d.resetAfterNanos(), d.limitIndex());
          outcomes.set(at, new PolicyOutcome(o.rule(), o.policy(), o.key(), o.limiter(), o.permits(), back,
              o.windowSeconds()));
        }
      }
    }
    return new RateLimitVerdict(outcomes);
  }

  /**
   * Every target's policies in one joint decision, or null if they cannot be: zero permits (a
   * peek), targets that take different permits, or one limiter named twice.
   */
  private RateLimitVerdict jointly(List<Target> targets, Instant now) {
    long permits = targets.isEmpty() ? 0 : targets.get(0).permits();
    List<RateLimiter> limiters = new ArrayList<>();
    Set<String> names = new java.util.HashSet<>();
    for (Target t : targets) {
      if (t.permits() != permits || permits == 0) {
        return null;
      }
      for (Policy p : t.rule().policies()) {
        String name = limiterName(t.rule(), p, key(t.key()));
        if (!names.add(name)) {
          return null;
        }
        limiters.add(tally.limiter(name, p.limit()).withVersion(t.rule().version())
            .withFailurePolicy(t.rule().failurePolicy()));
      }
    }
    dev.tally.JointDecision d = tally.decide(limiters, permits);
    List<PolicyOutcome> outcomes = new ArrayList<>(limiters.size());
    for (Target t : targets) {
      for (Policy p : t.rule().policies()) {
        Decision each = d.decision(outcomes.size());
        // as in turn: a policy that took nothing for a refused request decided nothing to report
        for (DecisionListener l : d.allowed() || !each.allowed() ? listeners : List.<DecisionListener>of()) {
          l.onDecision(t.rule().name(), p.id(), each);
        }
        outcomes.add(new PolicyOutcome(t.rule().name(), p.id(), key(t.key()), limiters.get(outcomes.size()).name(),
            permits, each, p.windowSeconds(now)));
      }
    }
    return new RateLimitVerdict(outcomes);
  }

  /**
   * Settles an allowed target once the request is answered: gives back the units it took beyond
   * {@code cost}, or takes the units {@code cost} asks beyond them. Limiters never go into debt:
   * what a policy no longer has is taken as far as it goes and the rest is forgiven, told to the
   * listeners as unpaid. A policy whose grant its failure policy answered (the store did not) took
   * nothing and is left alone: the store is not called for it, so that a refund does not add units
   * the key never spent once the store is back, and a request served uncounted stays uncounted.
   *
   * @param outcomes what each of the target's policies said when the request was checked, in the
   *     rule's order (its slice of {@link RateLimitVerdict#outcomes()})
   */
  void settle(Target t, long cost, List<PolicyOutcome> outcomes) {
    List<Policy> policies = t.rule().policies();
    if (outcomes.size() != policies.size()) {
      throw new IllegalArgumentException("rule '" + t.rule().name() + "' has " + policies.size()
          + " policies, and " + outcomes.size() + " outcomes were given");
    }
    String key = key(t.key());
    for (int i = 0; i < policies.size(); i++) {
      Policy p = policies.get(i);
      if (outcomes.get(i).decision().storeFailed()) {
        continue;
      }
      String name = limiterName(t.rule(), p, key);
      RateLimiter limiter = tally.limiter(name, p.limit()).withVersion(t.rule().version())
          .withFailurePolicy(t.rule().failurePolicy());
      if (cost < t.permits()) {
        limiter.refund(t.permits() - cost);
      } else if (cost > t.permits()) {
        long more = cost - t.permits();
        if (!limiter.decide(more).allowed()) {
          long left = Math.min(more, limiter.available());
          long taken = left > 0 && limiter.tryAcquire(left) ? left : 0;
          for (DecisionListener l : listeners) {
            l.onUnpaid(t.rule().name(), p.id(), more - taken);
          }
        }
      }
    }
  }

  private String limiterName(Rule rule, Policy policy, String key) {
    return prefix + rule.name() + ":" + policy.id() + ":" + key;
  }

  /** The key as stored: {@code anonymous} if missing, its SHA-256 if long. */
  static String key(String key) {
    if (key == null || key.isEmpty()) {
      return ANONYMOUS;
    }
    byte[] utf8 = key.getBytes(StandardCharsets.UTF_8);
    if (utf8.length <= MAX_KEY_BYTES) {
      return key;
    }
    try {
      return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(utf8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  /** Told of every decision a policy took (not of the read-only ones after a denial). */
  interface DecisionListener {
    void onDecision(String rule, String policy, Decision decision);

    /** A post-execution cost asked for {@code units} more than the policy had left; they were forgiven. */
    default void onUnpaid(String rule, String policy, long units) {}
  }
}
