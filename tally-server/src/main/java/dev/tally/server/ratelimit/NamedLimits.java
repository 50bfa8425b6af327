package dev.tally.server.ratelimit;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.server.async.Stages;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Limits named by an operator in rules files, checked for a domain's descriptors: what Envoy's
 * {@code ShouldRateLimit}, {@code POST /v1/ratelimit/{domain}} and {@code tally ratelimit} all
 * call, so the three answer alike (docs/envoy.md describes the behaviour in full).
 *
 * <p>Each descriptor's one matching rule (or the limit Envoy sent with it) is a fixed window
 * aligned to the epoch, as envoyproxy/ratelimit aligns its windows, in a limiter named after the
 * domain, the entries and the limit ({@link #limiterName}). A long key or value is hashed into
 * the name rather than refused: a request never escapes its limit by sending a long value, as it
 * would if Envoy, failing open, let a refused name through. The limit is part of the name, so a
 * reload that changes a limit takes effect at once, on a fresh window.
 *
 * <p>A limit without room takes nothing (envoyproxy/ratelimit counts refused hits too), except a
 * rule with {@code charge_hits}, whose hits are a cost already incurred (Envoy sends it at stream
 * end): they are charged into the window's bounded debt, and its checks (0 hits) refuse while
 * nothing is left. With
 * {@linkplain #NamedLimits(Tally, Rules, boolean) all or nothing}, the descriptors that can refuse
 * the request on their own take their hits in one joint decision ({@link Tally#decideAsync}); the
 * others are decided after it, each alone, taking hits only if it granted. No thread waits for
 * the store.
 */
public final class NamedLimits {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  /** The largest count Envoy's protocol carries (uint32): an unlimited descriptor's remaining. */
  public static final long MAX_UINT32 = 0xFFFF_FFFFL;
  public static final int MAX_DESCRIPTORS = 1000;
  /** The longest key or value a limiter's name carries as it is; a longer one is hashed. */
  public static final int MAX_PART_BYTES = 128;
  /** Keys whose stored limits differed, warned about once each, up to this many. */
  private static final int MAX_WARNED = 1000;

  public enum Code {
    /** Under its limit, unlimited, or no limit applies. */
    OK,
    /** Over its limit (even in shadow mode: the status says so, the overall code does not). */
    OVER_LIMIT
  }

  /**
   * One descriptor's answer: the rule that applied (a file's or the request's override; null if
   * none did), {@link #MAX_UINT32} remaining when unlimited, the limiter asked (null if none) and
   * the limit stored with it, which decided (-1 if none asked): it differs from the rule's only if
   * something other than these rules wrote the same name.
   */
  public record Status(Code code, Rule rule, long remaining, long resetNanos, String limiter,
      long storedLimit) {
    /** Whether this status can make the request over limit: a limit, not in shadow mode. */
    public boolean enforced() {
      return rule != null && !rule.unlimited() && !rule.shadowMode();
    }

    /** Whether the stored limits decided other than the rule says. */
    public boolean storedDiffers() {
      return storedLimit >= 0 && rule != null && storedLimit != rule.requestsPerUnit();
    }
  }

  /** The answer to a request, a status per descriptor; an unknown domain answers OK throughout. */
  public record Outcome(String domain, boolean knownDomain, Code overall, List<Status> statuses) {}

  private final Tally tally;
  private final Rules rules;
  private final boolean allOrNothing;
  private final Set<String> warned = ConcurrentHashMap.newKeySet();
  /**
   * The limit of each rule of the set in force, made once rather than on every decision (making
   * one validates it and writes its description); replaced with the set.
   */
  private volatile RuleLimits ruleLimits = new RuleLimits(null);

  private record RuleLimits(RuleSet set, Map<Rule, Limit> limits) {
    RuleLimits(RuleSet set) {
      this(set, new ConcurrentHashMap<>());
    }
  }

  public NamedLimits(Tally tally, Rules rules) {
    this(tally, rules, false);
  }

  /** All or nothing (see the class comment) is refused on a store {@link #requireJointDecisions} refuses. */
  public NamedLimits(Tally tally, Rules rules, boolean allOrNothing) {
    this.tally = Objects.requireNonNull(tally, "tally");
    this.rules = Objects.requireNonNull(rules, "rules");
    this.allOrNothing = allOrNothing;
    if (allOrNothing) {
      requireJointDecisions(tally.uri());
    }
  }

  /**
   * Refuses a store on which the limiters of one request cannot be decided together: Redis
   * Cluster, where a joint decision needs every key in one hash slot and limiter names carry no
   * hash tag (one tag for every name would put all the rules' counts on one node). Refused at
   * startup rather than on each request, which Envoy, failing open, would let through.
   */
  public static void requireJointDecisions(String storeUri) {
    if (storeUri.startsWith("redis-cluster:") || storeUri.startsWith("rediss-cluster:")) {
      throw new IllegalArgumentException("all-or-nothing named limits decide a request's"
          + " descriptors in one script, and on Redis Cluster their limiters (rls:DOMAIN:...) hash"
          + " to different slots; serve them from one Redis server (or Sentinel), or leave out"
          + " --rls-all-or-nothing to count each descriptor alone");
    }
  }

  public Rules rules() {
    return rules;
  }

  /**
   * One descriptor as {@link #check} matched it: its rule (null if none applies, or another
   * matched rule replaces it), the entries it is counted as ({@link RuleSet#countedAs}), the rule
   * set its limit comes from (null for a request's override) and the hits it takes (its own addend
   * if it carries one, else the request's).
   */
  private record Matched(Rule rule, List<Entry> counted, RuleSet set, long hits) {}

  /**
   * Checks {@code descriptors} of {@code domain}, taking {@code hitsAddend} units (0 means 1)
   * from every limit that has room. The stage fails if the store does (after its failure policy).
   * With an operation id (HTTP's {@code Idempotency-Key}, the command line's {@code --op-id}),
   * descriptor {@code i} decides with the id {@code ID/i}, so a repeat within the store's
   * retention takes nothing again and answers what the first call answered.
   */
  public CompletionStage<Outcome> check(String domain, List<Descriptor> descriptors,
      long hitsAddend, String operationId) {
    Objects.requireNonNull(domain, "domain");
    if (descriptors.isEmpty()) {
      throw new IllegalArgumentException("no descriptors: send at least one, e.g."
          + " [{\"key\": \"remote_address\", \"value\": \"10.0.0.1\"}]");
    }
    if (descriptors.size() > MAX_DESCRIPTORS) {
      throw new IllegalArgumentException(descriptors.size() + " descriptors in one request; at"
          + " most " + MAX_DESCRIPTORS);
    }
    if (hitsAddend < 0) {
      throw new IllegalArgumentException("hits_addend must be zero or more, not " + hitsAddend);
    }
    long hits = hitsAddend == 0 ? 1 : hitsAddend;
    RuleSet set = rules.current();
    boolean known = set.hasDomain(domain);
    List<Matched> matched = new ArrayList<>(descriptors.size());
    Set<String> replaced = new HashSet<>();
    for (Descriptor d : descriptors) {
      long own = d.hitsAddend() != null ? d.hitsAddend() : hits;
      // an override applies on a domain the rules define, as upstream: an unknown domain is OK throughout
      Rule r = d.override() != null && known ? override(domain, d) : null;
      Matched m = r != null ? new Matched(r, d.entries(), null, own)
          : new Matched(set.match(domain, d.entries()), set.countedAs(domain, d.entries()), set, own);
      if (m.rule() != null) {
        replaced.addAll(m.rule().replaces());
      }
      matched.add(m);
    }
    if (!replaced.isEmpty()) { // a limit that another matched one replaces is not checked
      matched.replaceAll(m -> m.rule() != null && replaced.contains(m.rule().name())
          ? new Matched(null, m.counted(), m.set(), m.hits()) : m);
    }
    if (allOrNothing && matched.size() > 1) {
      return allOrNothing(domain, known, matched, operationId);
    }
    if (matched.size() == 1) {
      Matched m = matched.get(0);
      return Stages.map(status(domain, m, m.hits(), partId(operationId, 0)),
          s -> outcome(domain, known, List.of(s)));
    }
    List<CompletableFuture<Status>> parts = new ArrayList<>(matched.size());
    for (int i = 0; i < matched.size(); i++) {
      Matched m = matched.get(i);
      parts.add(status(domain, m, m.hits(), partId(operationId, i)).toCompletableFuture());
    }
    return all(parts).thenApply(statuses -> outcome(domain, known, statuses));
  }

  /**
   * The all-or-nothing decision (see the class comment): one joint decision over the descriptors
   * that can refuse alone, then the others, each alone, counted only if it granted.
   */
  private CompletionStage<Outcome> allOrNothing(String domain, boolean known, List<Matched> matched,
      String operationId) {
    if (operationId != null) {
      throw new IllegalArgumentException("all-or-nothing named limits take no operation id"
          + " (Idempotency-Key): a request is decided once, all or nothing, and a repeat is a new"
          + " request");
    }
    int n = matched.size();
    List<Integer> joint = new ArrayList<>(n);
    List<String> names = new ArrayList<>(n);
    List<RateLimiter> limiters = new ArrayList<>(n);
    long jointHits = -1;
    boolean refused = false;
    try {
      for (int i = 0; i < n; i++) {
        Matched m = matched.get(i);
        Rule r = m.rule();
        if (r == null || r.unlimited() || r.shadowMode() || r.quotaMode() || r.chargeHits()) {
          continue; // none of these refuses the request alone by taking its hits
        }
        // a limit of 0 refuses the request whatever the others say: then nobody takes anything
        refused |= r.requestsPerUnit() == 0;
        if (refused || m.hits() == 0 || (jointHits >= 0 && m.hits() != jointHits)) {
          continue;
        }
        String name = limiterName(domain, m.counted(), r);
        if (names.contains(name)) { // a joint decision holds each key once
          continue;
        }
        jointHits = m.hits();
        joint.add(i);
        names.add(name);
        limiters.add(tally.limiter(name, limit(m)));
      }
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    Status[] statuses = new Status[n];
    long finalJointHits = jointHits;
    boolean refusedByZero = refused;
    // A charged rule's check (0 hits) refuses the request when nothing is left: asked before the
    // joint decision, so that such a refusal takes nothing from the others either.
    CompletionStage<Boolean> checks = refused ? CompletableFuture.completedFuture(false)
        : chargedChecks(domain, matched, statuses);
    CompletionStage<Boolean> first = checks.thenCompose(roomLeft -> !roomLeft || limiters.isEmpty()
        ? CompletableFuture.completedFuture(roomLeft && !refusedByZero)
        : jointDecision(limiters, finalJointHits, joint, names, matched, statuses));
    return first.thenCompose(granted -> {
      List<CompletableFuture<Status>> rest = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        Matched m = matched.get(i);
        rest.add(statuses[i] != null ? CompletableFuture.completedFuture(statuses[i])
            : status(domain, m, granted ? m.hits() : 0, null).toCompletableFuture());
      }
      return all(rest).thenApply(done -> outcome(domain, known, done));
    });
  }

  /**
   * The checks (0 hits) of the charged rules among {@code matched}, their statuses put in
   * {@code statuses}: whether each has something left.
   */
  private CompletionStage<Boolean> chargedChecks(String domain, List<Matched> matched, Status[] statuses) {
    List<CompletableFuture<Status>> checks = new ArrayList<>();
    List<Integer> at = new ArrayList<>();
    for (int i = 0; i < matched.size(); i++) {
      Matched m = matched.get(i);
      Rule r = m.rule();
      if (r != null && r.chargeHits() && !r.shadowMode() && m.hits() == 0) {
        at.add(i);
        checks.add(status(domain, m, 0, null).toCompletableFuture());
      }
    }
    if (checks.isEmpty()) {
      return CompletableFuture.completedFuture(true);
    }
    return all(checks).thenApply(checked -> {
      boolean roomLeft = true;
      for (int j = 0; j < checked.size(); j++) {
        Status s = checked.get(j);
        statuses[at.get(j)] = s;
        roomLeft &= s.code() == Code.OK || s.rule().quotaMode();
      }
      return roomLeft;
    });
  }

  /** The joint decision of the descriptors that can refuse alone, their statuses put in {@code statuses}. */
  private CompletionStage<Boolean> jointDecision(List<RateLimiter> limiters, long jointHits, List<Integer> joint,
      List<String> names, List<Matched> matched, Status[] statuses) {
    CompletionStage<dev.tally.JointDecision> decided;
    try {
      decided = tally.decideAsync(limiters, jointHits);
    } catch (IllegalArgumentException e) { // more keys than the store decides at once, say
      decided = CompletableFuture.failedFuture(e);
    }
    return decided.handle((d, failure) -> {
      Throwable cause = failure == null ? null : Stages.unwrap(failure);
      // A name that holds a counter, or a set the store cannot decide jointly (too many keys):
      // refused, never the error that Envoy, failing open, would let through. Store failures are
      // the request's.
      if (cause != null && !(cause instanceof dev.tally.WrongKindException)
          && !(cause instanceof IllegalArgumentException)) {
        throw Stages.unchecked(failure);
      }
      for (int j = 0; j < joint.size(); j++) {
        Rule r = matched.get(joint.get(j)).rule();
        statuses[joint.get(j)] = cause == null ? decided(names.get(j), r, d.decision(j), false)
            : refused(r, names.get(j));
      }
      if (cause != null) { // as a descriptor alone: refused, not a failure Envoy lets through
        warnOnce("refused " + names, "the limiters " + names + " cannot decide (" + cause.getMessage()
            + "); their requests are answered OVER_LIMIT until that is fixed");
      }
      return cause == null && d.allowed();
    });
  }

  /** The values of {@code stages}, in order, once every one is done; failed if any failed. */
  private static <T> CompletableFuture<List<T>> all(List<CompletableFuture<T>> stages) {
    return CompletableFuture.allOf(stages.toArray(CompletableFuture[]::new))
        .thenApply(v -> stages.stream().map(CompletableFuture::join).toList());
  }

  /**
   * OVER_LIMIT if an enforced descriptor outside quota mode is over its limit, or if the request
   * has quota-mode descriptors and every one of them is over: as envoyproxy/ratelimit, a request
   * passes while any of its quotas has room.
   */
  private static Outcome outcome(String domain, boolean known, List<Status> statuses) {
    boolean over = false;
    int quotas = 0;
    int quotasOver = 0;
    for (Status s : statuses) {
      if (!s.enforced()) {
        continue;
      }
      boolean isOver = s.code() == Code.OVER_LIMIT;
      if (s.rule().quotaMode()) {
        quotas++;
        quotasOver += isOver ? 1 : 0;
      } else {
        over |= isOver;
      }
    }
    over |= quotas > 0 && quotasOver == quotas;
    return new Outcome(domain, known, over ? Code.OVER_LIMIT : Code.OK, statuses);
  }

  /** The rule made of the limit a descriptor carries, or null if Tally cannot apply it. */
  private Rule override(String domain, Descriptor d) {
    Descriptor.LimitOverride o = d.override();
    if (o.unit() == null) {
      warnOnce("override " + domain + d, "a descriptor of domain '" + domain + "' " + d
          + " carries a limit override with a unit Tally does not know; its rules apply"
          + " instead");
      return null;
    }
    return new Rule(o.requestsPerUnit(), o.unit(), false, false, null, List.of(),
        "limit override", "the request", false, false);
  }

  /**
   * {@code ID/i}, shortened to the 128 characters an id may have by cutting the id's end; null
   * for a null id. A descriptor's id, and an acquire's attempt's ({@code TallyApp}).
   */
  public static String partId(String id, int i) {
    if (id == null) {
      return null;
    }
    String suffix = "/" + i;
    return (id.length() + suffix.length() <= 128 ? id : id.substring(0, 128 - suffix.length()))
        + suffix;
  }

  /** {@code m} decided alone, taking {@code hits}. */
  private CompletionStage<Status> status(String domain, Matched m, long hits, String operationId) {
    Rule rule = m.rule();
    if (rule == null) {
      return CompletableFuture.completedFuture(new Status(Code.OK, null, 0, 0, null, -1));
    }
    if (rule.unlimited()) {
      return CompletableFuture.completedFuture(
          new Status(Code.OK, rule, MAX_UINT32, 0, null, -1));
    }
    if (rule.requestsPerUnit() == 0) { // refuses everything: nothing to count
      return CompletableFuture.completedFuture(refused(rule, null));
    }
    String name = limiterName(domain, m.counted(), rule);
    RateLimiter limiter;
    try {
      limiter = tally.limiter(name, limit(m));
      if (operationId != null) {
        limiter = limiter.withOperationId(operationId);
      }
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    // A charged rule's hits are a cost already incurred (Envoy sends it at stream end): they land
    // whether or not they fit, and its check (0 hits) refuses once nothing is left.
    boolean charging = rule.chargeHits() && hits > 0;
    boolean checkingCharged = rule.chargeHits() && hits == 0;
    CompletionStage<Decision> step = charging ? limiter.async().charge(hits) : limiter.async().decide(hits);
    return step.handle((decision, failure) -> {
      if (failure == null) {
        return decided(name, rule, decision, checkingCharged && decision.remaining() == 0);
      }
      Throwable cause = Stages.unwrap(failure);
      if (!(cause instanceof dev.tally.WrongKindException)) { // store failures, a reused id: the request's
        throw Stages.unchecked(failure);
      }
      // This one name holds a counter: refuse this descriptor and decide the others, rather than
      // fail the whole request, which Envoy failing open lets through.
      warnOnce("refused " + name, "limiter '" + name + "' cannot decide (" + cause.getMessage() + "); its"
          + " descriptor is answered OVER_LIMIT until that is fixed");
      return refused(rule, name);
    });
  }

  /** OVER_LIMIT, nothing left until the window ends, and no decision: {@code limiter} is the one asked, or null. */
  private Status refused(Rule rule, String limiter) {
    return new Status(Code.OVER_LIMIT, rule, 0, windowLeft(rule.unit()), limiter, -1);
  }

  /**
   * The fixed window of {@code m}'s rule: made once for a rule of a set, and each time for a
   * request's override, which kept would pile up.
   */
  private Limit limit(Matched m) {
    if (m.set() == null) {
      return fixedWindow(m.rule());
    }
    RuleLimits known = ruleLimits;
    if (known.set() != m.set()) {
      known = new RuleLimits(m.set());
      ruleLimits = known;
    }
    return known.limits().computeIfAbsent(m.rule(), NamedLimits::fixedWindow);
  }

  private static Limit fixedWindow(Rule rule) {
    return Limit.fixedWindow(rule.requestsPerUnit(), rule.unit().window());
  }

  /** {@code spent}: over the limit though {@code d} allowed, a charged rule's check with nothing left. */
  private Status decided(String name, Rule rule, Decision d, boolean spent) {
    // The reset of the limit whose remaining and limit these are: a limiter whose stored state
    // has several limits (reconfigured by hand) resets as a whole later than its deciding limit.
    long reset = decidingLimit(d).resetAfterNanos();
    if (reset <= 0) {
      reset = !d.allowed() && d.retryAfterNanos() != Decision.NEVER && d.retryAfterNanos() > 0
          ? d.retryAfterNanos() : windowLeft(rule.unit());
    }
    // over its limit, nothing is left to the caller, whatever a smaller request could still take
    boolean allowed = d.allowed() && !spent;
    Status s = new Status(allowed ? Code.OK : Code.OVER_LIMIT, rule,
        allowed ? Math.min(d.remaining(), MAX_UINT32) : 0, reset, name, d.limit());
    if (s.storedDiffers()) {
      warnOnce(name, "limiter '" + name + "' holds a stored limit of " + d.limit() + ", not the "
          + rule.describe() + " of " + rule.source() + ": the stored limits decide, as for every"
          + " limiter, until that state expires or 'tally limit reconfigure' changes it");
    }
    return s;
  }

  static Decision.LimitState decidingLimit(Decision d) {
    List<Decision.LimitState> each = d.limits();
    return each.size() == 1 ? each.get(0) : each.get(d.limitIndex());
  }

  /** Until the current window of {@code unit} ends, on Tally's clock. */
  private long windowLeft(Unit unit) {
    long w = unit.window().toNanos();
    return w - Math.floorMod(tally.timeSource().nanos(), w);
  }

  private void warnOnce(String id, String message) {
    if (warned.size() < MAX_WARNED && warned.add(id)) {
      LOG.log(Level.WARNING, message);
    }
  }

  /**
   * The limiter a rule counts in for these entries:
   * {@code rls:DOMAIN:KEY=VALUE:...:COUNT/UNIT}, with any part over {@value #MAX_PART_BYTES}
   * bytes hashed, and everything between the domain and the limit hashed if the name would
   * still be longer than a key may be.
   */
  public static String limiterName(String domain, List<Entry> entries, Rule rule) {
    StringBuilder b = new StringBuilder(32 + 16 * entries.size()).append("rls:");
    part(b, domain);
    int afterDomain = b.length();
    for (Entry e : entries) {
      b.append(':');
      part(b, e.key());
      b.append('=');
      part(b, e.value());
    }
    String limit = ":" + rule.requestsPerUnit() + "/" + rule.unit().yamlName();
    if (utf8Length(b) + limit.length() > dev.tally.Counters.MAX_KEY_BYTES) {
      String entriesPart = b.substring(afterDomain);
      b.setLength(afterDomain);
      b.append(":").append(hash(entriesPart));
    }
    return b.append(limit).toString();
  }

  private static void part(StringBuilder b, String s) {
    if (s.length() > MAX_PART_BYTES / 3 && s.getBytes(StandardCharsets.UTF_8).length > MAX_PART_BYTES) {
      b.append(hash(s));
    } else {
      escape(b, s);
    }
  }

  /** {@code sha256-} and the unpadded base64url SHA-256 of {@code s}'s UTF-8 bytes: 50 characters. */
  static String hash(String s) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
      return "sha256-" + Base64.getUrlEncoder().withoutPadding().encodeToString(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  private static int utf8Length(CharSequence s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      n += c < 0x80 ? 1 : c < 0x800 ? 2 : Character.isSurrogate(c) ? 2 : 3; // a pair: 4 bytes, 2 each
    }
    return n;
  }

  private static void escape(StringBuilder b, String s) {
    int first = 0;
    while (first < s.length() && !needsEscape(s.charAt(first))) {
      first++;
    }
    // most names need no escape: one bulk copy, not an append per character
    b.append(s, 0, first);
    for (int i = first; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '%' -> b.append("%25");
        case ':' -> b.append("%3A");
        case '=' -> b.append("%3D");
        default -> b.append(c);
      }
    }
  }

  private static boolean needsEscape(char c) {
    return c == '%' || c == ':' || c == '=';
  }
}
