package dev.tally.spring;

import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.LimitSpec;
import dev.tally.RateLimiter;
import dev.tally.Reservation;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.http.RateLimitFields;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

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
 * be given back. A check of zero permits (a peek, refused when nothing is left), one whose
 * targets take different permits or name one limiter twice, and one with a filter rule charged
 * after the response (which reserves) are decided in turn, as above.
 *
 * <p>A filter rule charged after the response reserves its permits on each policy
 * ({@link RateLimiter#reserve}) instead of taking them, and its reservations are settled at the
 * request's real cost once it is answered ({@link FilterRules.Matched}); a denial cancels the
 * reservations granted before it, as it gives back units taken.
 */
public class TallyRateLimits {
  /** Keys longer than this (in UTF-8 bytes) are replaced by their SHA-256, to stay well inside Tally's 1024. */
  static final int MAX_KEY_BYTES = 512;
  /** The key of a request that has none (no such header, no principal). */
  static final String ANONYMOUS = "anonymous";
  /** When a fail-closed answer says to retry, as the library's own fail-closed answers do. */
  private static final long FAIL_CLOSED_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final Log LOG = LogFactory.getLog(TallyRateLimits.class);

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
      if (!LimitSpec.NAME.matcher(name).matches()) {
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
    return limiter(r, r.policies().get(0), key(key));
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

  /**
   * One rule applied to one key for one request.
   *
   * @param reservationTtl for a rule charged after the response, how long its reservation is held;
   *     null for a rule decided before the request and done with
   */
  record Target(Rule rule, String key, long permits, Duration reservationTtl) {
    Target {
      Objects.requireNonNull(rule, "rule");
      if (permits < 0) {
        throw new IllegalArgumentException("permits must be zero or more, not " + permits);
      }
    }

    Target(Rule rule, String key, long permits) {
      this(rule, key, permits, null);
    }

    /** Whether the permits are reserved, to be settled at the request's real cost once it is answered. */
    boolean reserves() {
      return reservationTtl != null;
    }

    /**
     * What is taken before the request: the permits, and at least 1 for a reservation, which is
     * refused when less than 1 is left, as a zero-permit check (a reservation of nothing would be
     * granted even by an empty limiter).
     */
    long estimate() {
      return reserves() ? Math.max(1, permits) : permits;
    }
  }

  /**
   * What a request was answered before it ran, and what it holds until it is answered.
   *
   * @param reservations one per outcome of {@link #verdict}: the reservation its policy holds, or
   *     null where the policy decided (a rule not charged after the response), was refused, or was
   *     answered by its failure policy (the store took nothing, so there is nothing to settle)
   */
  record Admission(RateLimitVerdict verdict, List<Reservation> reservations) {}

  /** Applies every target's policies in order; see the class comment for how a denial unwinds. */
  RateLimitVerdict check(List<Target> targets) {
    return admit(targets).verdict();
  }

  /**
   * Applies every target's policies in order, reserving the permits of targets that are settled
   * after the request: a refusal by one policy cancels the reservations already granted, as it gives
   * back the units already taken, so that a refused request holds nothing.
   */
  Admission admit(List<Target> targets) {
    Instant now = Instant.ofEpochSecond(0, tally.timeSource().nanos());
    if (joint) {
      RateLimitVerdict v = jointly(targets, now);
      if (v != null) {
        return new Admission(v, Collections.nCopies(v.outcomes().size(), null));
      }
    }
    List<PolicyOutcome> outcomes = new ArrayList<>();
    List<Reservation> reservations = new ArrayList<>();
    List<Integer> granted = new ArrayList<>();
    List<RateLimiter> grantedLimiters = new ArrayList<>();
    boolean denied = false;
    try {
      for (Target t : targets) {
        String key = key(t.key());
        for (LimitSpec p : t.rule().policies()) {
          String name = limiterName(t.rule(), p, key);
          RateLimiter limiter = limiter(t.rule(), p, key);
          Answer answer = answer(limiter, t, denied);
          Decision d = answer.decision();
          if (!denied) {
            for (DecisionListener l : listeners) {
              l.onDecision(t.rule().name(), p.name(), d);
            }
            if (d.allowed()) {
              granted.add(outcomes.size());
              grantedLimiters.add(limiter);
            } else {
              denied = true;
            }
          }
          reservations.add(answer.held());
          outcomes.add(new PolicyOutcome(t.rule().name(), p.name(), key, name, t.estimate(), d,
              RateLimitFields.windowSeconds(p, now)));
        }
      }
    } catch (StoreException e) {
      // Answered 503 (failure policy throw): like a refused request, it holds nothing.
      for (int i = 0; i < granted.size(); i++) {
        int at = granted.get(i);
        try {
          giveBack(grantedLimiters.get(i), outcomes.get(at), reservations.get(at));
        } catch (StoreException again) {
          e.addSuppressed(again);
        }
      }
      throw e;
    }
    if (denied) {
      for (int i = 0; i < granted.size(); i++) {
        int at = granted.get(i);
        PolicyOutcome o = outcomes.get(at);
        if (giveBack(grantedLimiters.get(i), o, reservations.get(at))) {
          Decision d = o.decision();
          Decision back = new Decision(true, Math.min(d.limit(), d.remaining() + o.permits()), d.limit(), 0,
              d.resetAfterNanos(), d.limitIndex());
          outcomes.set(at, new PolicyOutcome(o.rule(), o.policy(), o.key(), o.limiter(), o.permits(), back,
              o.windowSeconds()));
        }
        reservations.set(at, null);
      }
    }
    return new Admission(new RateLimitVerdict(outcomes), Collections.unmodifiableList(reservations));
  }

  /** What one policy answered a request, and the reservation it holds for it, if any. */
  private record Answer(Decision decision, Reservation held) {}

  /**
   * {@code t}'s answer from one of its policies: only read ({@code decide(0)}) after an earlier
   * policy denied, else its permits reserved or taken.
   */
  private static Answer answer(RateLimiter limiter, Target t, boolean denied) {
    if (denied) {
      return new Answer(limiter.decide(0), null);
    }
    if (!t.reserves()) {
      // Zero permits asks "is anything left?": a peek, refused when nothing is (decide(0) always allows).
      return new Answer(t.permits() == 0 ? limiter.peek() : limiter.decide(t.permits()), null);
    }
    Reservation r = reserve(limiter, t);
    if (r == null) {
      return new Answer(failedReservation(limiter, t.rule().failurePolicy()), null);
    }
    return new Answer(r.decision(), r.granted() ? r : null); // a refused reservation holds nothing
  }

  /**
   * {@code t}'s estimate reserved on {@code limiter}, or null if the store failed and the rule's
   * failure policy answers in its place.
   *
   * @throws StoreException if the store failed and the failure policy is THROW
   */
  private static Reservation reserve(RateLimiter limiter, Target t) {
    try {
      return limiter.reserve(t.estimate(), t.reservationTtl());
    } catch (StoreException e) {
      if (t.rule().failurePolicy() == FailurePolicy.THROW) {
        throw e;
      }
      return null;
    }
  }

  /**
   * The failure policy's answer to a reservation the store failed. The library applies none to
   * reservations (they are accounting); the rule's answers here as it does for the rule's decisions,
   * and through the limiter, so that it is logged and told to the TallyListener like them: a peek,
   * which the policy answers while the store still fails (fail-open allows, fail-closed refuses).
   */
  private static Decision failedReservation(RateLimiter limiter, FailurePolicy policy) {
    Decision answer = limiter.peek();
    if (answer.storeFailed() || (policy == FailurePolicy.FAIL_OPEN && !answer.allowed())) {
      return answer;
    }
    // The store answered the peek: it came back just after failing the reservation, which the
    // policy still answers, nothing having been reserved.
    return policy == FailurePolicy.FAIL_OPEN ? answer.answeredByFailurePolicy()
        : new Decision(false, 0, answer.limit(), FAIL_CLOSED_RETRY_NANOS, FAIL_CLOSED_RETRY_NANOS, answer.limitIndex())
            .answeredByFailurePolicy();
  }

  /**
   * Gives back what one policy took for a request that is not served after all: cancels its
   * reservation, or refunds its units. A grant its failure policy answered took nothing from a
   * store that did not answer: the store is not called for it, so that a refund does not add units
   * the key never spent once the store is back.
   *
   * @return whether anything was given back
   */
  private static boolean giveBack(RateLimiter limiter, PolicyOutcome o, Reservation held) {
    if (held != null) {
      try {
        held.cancel();
      } catch (RuntimeException e) {
        // It is settled at its estimate when its ttl ends: a refused request is not failed for it.
        LOG.warn("rate-limit limiter '" + o.limiter() + "': cancelling the reservation of a refused request failed,"
            + " so its " + o.permits() + " units stay taken: " + e);
        return false;
      }
      return true;
    }
    if (o.permits() > 0 && !o.decision().storeFailed()) {
      limiter.refund(o.permits());
      return true;
    }
    return false;
  }

  /**
   * Every target's policies in one joint decision, or null if they cannot be: zero permits (a
   * peek), targets that take different permits, one limiter named twice, or a reservation (a
   * rule charged after the response), which a joint decision cannot take.
   */
  private RateLimitVerdict jointly(List<Target> targets, Instant now) {
    long permits = targets.isEmpty() ? 0 : targets.get(0).permits();
    List<RateLimiter> limiters = new ArrayList<>();
    Set<String> names = new java.util.HashSet<>();
    for (Target t : targets) {
      if (t.permits() != permits || permits == 0 || t.reserves()) {
        return null;
      }
      for (LimitSpec p : t.rule().policies()) {
        String name = limiterName(t.rule(), p, key(t.key()));
        if (!names.add(name)) {
          return null;
        }
        limiters.add(limiter(t.rule(), p, key(t.key())));
      }
    }
    dev.tally.JointDecision d = tally.decide(limiters, permits);
    List<PolicyOutcome> outcomes = new ArrayList<>(limiters.size());
    for (Target t : targets) {
      for (LimitSpec p : t.rule().policies()) {
        Decision each = d.decision(outcomes.size());
        // as in turn: a policy that took nothing for a refused request decided nothing to report
        for (DecisionListener l : d.allowed() || !each.allowed() ? listeners : List.<DecisionListener>of()) {
          l.onDecision(t.rule().name(), p.name(), each);
        }
        outcomes.add(new PolicyOutcome(t.rule().name(), p.name(), key(t.key()), limiters.get(outcomes.size()).name(),
            permits, each, RateLimitFields.windowSeconds(p, now)));
      }
    }
    return new RateLimitVerdict(outcomes);
  }

  /**
   * Gives back what an allowed target took, after a refusal further down the chain: cancels the
   * reservations it holds and refunds the units its other policies took.
   *
   * @param outcomes what each of the target's policies said when the request was checked, in the
   *     rule's order (its slice of {@link RateLimitVerdict#outcomes()})
   * @param held the reservation of each policy, in the same order (its slice of
   *     {@link Admission#reservations()})
   */
  void giveBack(Target t, List<PolicyOutcome> outcomes, List<Reservation> held) {
    List<LimitSpec> policies = t.rule().policies();
    if (outcomes.size() != policies.size() || held.size() != policies.size()) {
      throw new IllegalArgumentException("rule '" + t.rule().name() + "' has " + policies.size()
          + " policies, and " + outcomes.size() + " outcomes and " + held.size() + " reservations were given");
    }
    String key = key(t.key());
    for (int i = 0; i < policies.size(); i++) {
      giveBack(limiter(t.rule(), policies.get(i), key), outcomes.get(i), held.get(i));
    }
  }

  private RateLimiter limiter(Rule rule, LimitSpec policy, String key) {
    return tally.limiter(limiterName(rule, policy, key), policy.limit()).withVersion(rule.version())
        .withFailurePolicy(rule.failurePolicy());
  }

  private String limiterName(Rule rule, LimitSpec policy, String key) {
    return prefix + rule.name() + ":" + policy.name() + ":" + key;
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
  }
}
