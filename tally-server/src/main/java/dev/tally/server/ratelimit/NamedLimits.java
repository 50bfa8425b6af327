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
    int n = descriptors.size();
    Rule[] matched = new Rule[n];
    boolean[] overridden = new boolean[n];
    List<List<Entry>> counted = new ArrayList<>(n);
    Set<String> replaced = null;
    boolean known = set.hasDomain(domain);
    for (int i = 0; i < n; i++) {
      Descriptor d = descriptors.get(i);
      // an override applies on a domain the rules define, as upstream: an unknown domain is OK throughout
      Rule r = d.override() != null && known ? override(domain, d) : null;
      matched[i] = r != null ? r : set.match(domain, d.entries());
      overridden[i] = r != null;
      counted.add(r != null ? d.entries() : set.countedAs(domain, d.entries()));
      if (matched[i] != null && !matched[i].replaces().isEmpty()) {
        if (replaced == null) {
          replaced = new HashSet<>();
        }
        replaced.addAll(matched[i].replaces());
      }
    }
    if (replaced != null) { // a limit that another matched one replaces is not checked
      for (int i = 0; i < n; i++) {
        if (matched[i] != null && matched[i].name() != null
            && replaced.contains(matched[i].name())) {
          matched[i] = null;
        }
      }
    }
    if (allOrNothing && n > 1) {
      return allOrNothing(domain, known, descriptors, hits, operationId, set, matched, overridden, counted);
    }
    if (n == 1) {
      CompletionStage<Status> one = status(overridden[0] ? null : set, domain, counted.get(0), matched[0],
          hits(descriptors.get(0), hits), partId(operationId, 0));
      if (one instanceof CompletableFuture<Status> f && f.isDone() && !f.isCompletedExceptionally()) {
        return CompletableFuture.completedFuture(outcome(domain, known, List.of(f.join())));
      }
      return one.thenApply(s -> outcome(domain, known, List.of(s)));
    }
    List<CompletableFuture<Status>> parts = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      parts.add(status(overridden[i] ? null : set, domain, counted.get(i), matched[i], hits(descriptors.get(i), hits), partId(operationId, i))
          .toCompletableFuture());
    }
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> {
      List<Status> statuses = new ArrayList<>(n);
      for (CompletableFuture<Status> p : parts) {
        statuses.add(p.join());
      }
      return outcome(domain, known, statuses);
    });
  }

  /**
   * The all-or-nothing decision (see the class comment): one joint decision over the descriptors
   * that can refuse alone, then the others, each alone, counted only if it granted.
   */
  private CompletionStage<Outcome> allOrNothing(String domain, boolean known,
      List<Descriptor> descriptors, long hits, String operationId, RuleSet set, Rule[] matched,
      boolean[] overridden, List<List<Entry>> counted) {
    if (operationId != null) {
      throw new IllegalArgumentException("all-or-nothing named limits take no operation id"
          + " (Idempotency-Key): a request is decided once, all or nothing, and a repeat is a new"
          + " request");
    }
    int n = descriptors.size();
    List<Integer> joint = new ArrayList<>(n);
    List<String> names = new ArrayList<>(n);
    List<RateLimiter> limiters = new ArrayList<>(n);
    long jointHits = -1;
    boolean refused = false;
    try {
      for (int i = 0; i < n; i++) {
        Rule r = matched[i];
        long h = hits(descriptors.get(i), hits);
        if (r == null || r.unlimited() || r.shadowMode() || r.quotaMode() || r.chargeHits()) {
          continue; // none of these refuses the request alone by taking its hits
        }
        // a limit of 0 refuses the request whatever the others say: then nobody takes anything
        refused |= r.requestsPerUnit() == 0;
        if (refused || h == 0 || (jointHits >= 0 && h != jointHits)) {
          continue;
        }
        String name = limiterName(domain, counted.get(i), r);
        if (names.contains(name)) { // a joint decision holds each key once
          continue;
        }
        jointHits = h;
        joint.add(i);
        names.add(name);
        limiters.add(tally.limiter(name, limit(overridden[i] ? null : set, r)));
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
        : chargedChecks(domain, descriptors, hits, set, matched, overridden, counted, statuses);
    CompletionStage<Boolean> first = checks.thenCompose(roomLeft -> !roomLeft || limiters.isEmpty()
        ? CompletableFuture.completedFuture(roomLeft && !refusedByZero)
        : jointDecision(limiters, finalJointHits, joint, names, matched, statuses));
    return first.thenCompose(granted -> {
      List<CompletableFuture<Status>> rest = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        rest.add(statuses[i] != null ? CompletableFuture.completedFuture(statuses[i])
            : status(overridden[i] ? null : set, domain, counted.get(i), matched[i],
                granted ? hits(descriptors.get(i), hits) : 0, null).toCompletableFuture());
      }
      return CompletableFuture.allOf(rest.toArray(CompletableFuture[]::new))
          .thenApply(v -> outcome(domain, known, rest.stream().map(CompletableFuture::join).toList()));
    });
  }

  /**
   * The checks (0 hits) of the charged rules among {@code matched}, their statuses put in
   * {@code statuses}: whether each has something left.
   */
  private CompletionStage<Boolean> chargedChecks(String domain, List<Descriptor> descriptors, long hits,
      RuleSet set, Rule[] matched, boolean[] overridden, List<List<Entry>> counted, Status[] statuses) {
    List<CompletableFuture<Status>> checks = new ArrayList<>();
    List<Integer> at = new ArrayList<>();
    for (int i = 0; i < matched.length; i++) {
      Rule r = matched[i];
      if (r != null && r.chargeHits() && !r.shadowMode() && hits(descriptors.get(i), hits) == 0) {
        at.add(i);
        checks.add(status(overridden[i] ? null : set, domain, counted.get(i), r, 0, null).toCompletableFuture());
      }
    }
    if (checks.isEmpty()) {
      return CompletableFuture.completedFuture(true);
    }
    return CompletableFuture.allOf(checks.toArray(CompletableFuture[]::new)).thenApply(v -> {
      boolean roomLeft = true;
      for (int j = 0; j < checks.size(); j++) {
        Status s = checks.get(j).join();
        statuses[at.get(j)] = s;
        roomLeft &= s.code() == Code.OK || s.rule().quotaMode();
      }
      return roomLeft;
    });
  }

  /** The joint decision of the descriptors that can refuse alone, their statuses put in {@code statuses}. */
  private CompletionStage<Boolean> jointDecision(List<RateLimiter> limiters, long jointHits, List<Integer> joint,
      List<String> names, Rule[] matched, Status[] statuses) {
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
        Rule r = matched[joint.get(j)];
        statuses[joint.get(j)] = cause == null ? decided(names.get(j), r, d.decision(j))
            : new Status(Code.OVER_LIMIT, r, 0, windowLeft(r.unit()), names.get(j), -1);
      }
      if (cause != null) { // as a descriptor alone: refused, not a failure Envoy lets through
        warnOnce("refused " + names, "the limiters " + names + " cannot decide (" + cause.getMessage()
            + "); their requests are answered OVER_LIMIT until that is fixed");
      }
      return cause == null && d.allowed();
    });
  }

  /** What {@code d} takes: its own addend if it carries one, else the request's. */
  private static long hits(Descriptor d, long request) {
    return d.hitsAddend() != null ? d.hitsAddend() : request;
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
        "limit override", "the request");
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

  /** {@code set} is null for a request's override; {@code entries} as {@link RuleSet#countedAs} counts them. */
  private CompletionStage<Status> status(RuleSet set, String domain, List<Entry> entries, Rule rule,
      long hits, String operationId) {
    if (rule == null) {
      return CompletableFuture.completedFuture(new Status(Code.OK, null, 0, 0, null, -1));
    }
    if (rule.unlimited()) {
      return CompletableFuture.completedFuture(
          new Status(Code.OK, rule, MAX_UINT32, 0, null, -1));
    }
    if (rule.requestsPerUnit() == 0) { // refuses everything: nothing to count
      return CompletableFuture.completedFuture(new Status(Code.OVER_LIMIT, rule, 0,
          windowLeft(rule.unit()), null, -1));
    }
    String name = limiterName(domain, entries, rule);
    RateLimiter limiter;
    try {
      limiter = tally.limiter(name, limit(set, rule));
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
      return new Status(Code.OVER_LIMIT, rule, 0, windowLeft(rule.unit()), name, -1);
    });
  }

  /**
   * The fixed window of {@code rule}: made once for a rule of {@code set}, and each time for a
   * request's override ({@code set} null), which kept would pile up.
   */
  private Limit limit(RuleSet set, Rule rule) {
    if (set == null) {
      return Limit.fixedWindow(rule.requestsPerUnit(), rule.unit().window());
    }
    RuleLimits known = ruleLimits;
    if (known.set() != set) {
      known = new RuleLimits(set);
      ruleLimits = known;
    }
    return known.limits().computeIfAbsent(rule,
        r -> Limit.fixedWindow(r.requestsPerUnit(), r.unit().window()));
  }

  private Status decided(String name, Rule rule, Decision d) {
    return decided(name, rule, d, false);
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
    String unit = rule.unit().yamlName();
    int limitLength = 2 + stringSize(rule.requestsPerUnit()) + unit.length(); // ":N/unit"
    if (utf8Length(b) + limitLength > dev.tally.Counters.MAX_KEY_BYTES) {
      String entriesPart = b.substring(afterDomain);
      b.setLength(afterDomain);
      b.append(":").append(hash(entriesPart));
    }
    return b.append(':').append(rule.requestsPerUnit()).append('/').append(unit).toString();
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

  private static int stringSize(long v) {
    int n = v < 0 ? 2 : 1;
    for (long x = Math.abs(v / 10); x > 0; x /= 10) {
      n++;
    }
    return n;
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
