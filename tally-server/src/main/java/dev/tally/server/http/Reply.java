package dev.tally.server.http;

import dev.tally.StoreException;
import dev.tally.http.RateLimitFields;
import dev.tally.server.app.Health;
import dev.tally.server.app.JointLimiterDecision;
import dev.tally.server.app.LimiterDecision;
import dev.tally.server.app.NamedLimitResult;
import dev.tally.server.app.Problem;
import dev.tally.server.ratelimit.NamedLimits.Code;
import java.lang.System.Logger.Level;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The answer to one operation, as both front ends give it: the HTTP status, the {@link Problem}
 * if it did not succeed (hence the exit code), the result record of {@code dev.tally.server.app}
 * it carries, and any header fields ({@code RateLimit}, {@code Retry-After}). Its JSON body is
 * written by {@link Json#body}; the command line's {@code --json} output is that same body.
 */
public final class Reply {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");

  private final int status;
  private final Problem problem;
  /** A problem's {@code detail} (and {@code message}), or null. */
  private final String detail;
  private final Object result;
  private Map<String, String> headers = Map.of();
  private String decidingPolicy;
  /** The body as {@code dev.tally.http} renders it (a limiter's refusal), or null. */
  private dev.tally.http.Problem rendered;

  private Reply(Problem problem, String detail, Object result) {
    this.status = problem == null ? 200 : problem.status();
    this.problem = problem;
    this.detail = detail;
    this.result = result;
  }

  /**
   * The reply for a result of {@code dev.tally.server.app}: 200, or for a denied decision 429
   * with the quota-exceeded problem's members, and a health probe that failed as its problem.
   */
  public static Reply of(Object result) {
    if (result instanceof LimiterDecision d) {
      return decision(d);
    }
    if (result instanceof NamedLimitResult n) {
      return named(n);
    }
    if (result instanceof JointLimiterDecision j) {
      return joint(j);
    }
    if (result instanceof Health h && h.failure() != null) {
      // A probe asks whether this server can serve: a store that times out cannot, so 503 as for
      // one that refuses (its detail says which), not the 504 of an operation left in doubt.
      Problem p = h.failure() instanceof StoreException ? Problem.STORE_UNAVAILABLE : Problem.INTERNAL;
      return new Reply(p, String.valueOf(h.failure().getMessage()), h);
    }
    return new Reply(null, null, result);
  }

  /**
   * A limiter's decision, rendered by {@code dev.tally.http} as the Spring Boot starter renders
   * one: 200 with the {@code RateLimit} fields, or 429 and the quota-exceeded problem. A decision
   * a failure policy gave in the store's place carries no quota: fail-open answers 200 without
   * the fields, fail-closed 503 {@code store_unavailable} with {@code Retry-After}.
   */
  private static Reply decision(LimiterDecision ld) {
    var d = ld.decision();
    Instant now = Instant.now();
    RateLimitFields fields = RateLimitFields.of(d, ld.limits().stream().map(s -> RateLimitFields.Policy.of(s, now)).toList());
    Reply reply;
    if (d.allowed()) {
      reply = new Reply(null, null, ld);
    } else if (d.storeFailed()) {
      String detail = storeFailed(ld) + "; retry after " + fields.retryAfterSeconds().orElse(1) + "s";
      reply = new Reply(Problem.STORE_UNAVAILABLE, detail, null);
      reply.rendered = dev.tally.http.Problem.storeUnavailable(detail)
          .member("error", Problem.STORE_UNAVAILABLE.code()).member("message", detail)
          .member("name", ld.name());
    } else {
      String detail = ld.never() ? Json.neverMessage(ld)
          : "the limiter '" + ld.name() + "' has no room for " + ld.permits() + " permits now";
      reply = new Reply(Problem.DENIED, detail, ld);
      var body = dev.tally.http.Problem.quotaExceeded(detail).member("error", Problem.DENIED.code())
          .member("message", detail).decision(ld.name(), ld.permits(), d);
      if (ld.storedLimitsDiffer()) {
        body.member("storedLimits", Json.STORED_DIFFER);
      }
      if (ld.limitsMismatch() != null) {
        body.member("limitsMismatch", ld.limitsMismatch()).member("storedVersion", d.storedVersion());
      }
      if (ld.givenAs() != null) {
        body.member(ld.givenAs(), ld.given());
      }
      reply.rendered = body.violatedPolicies(fields);
    }
    fields.headers().forEach(reply::header);
    reply.decidingPolicy = fields.decidingPolicy();
    if (ld.storedLimitsDiffer() && !d.storeFailed()) {
      reply.header("Tally-Limits", "stored-differ");
    }
    return reply;
  }

  /**
   * A joint decision: 200 when every limiter granted, else 429 with the quota-exceeded problem's
   * members and each limiter's decision, and {@code Retry-After} unless the permits can never be
   * granted; 503 {@code store_unavailable} when a fail-closed limiter refused for a store that
   * failed.
   */
  private static Reply joint(JointLimiterDecision j) {
    if (j.joint().allowed()) {
      return new Reply(null, null, j);
    }
    LimiterDecision refused = j.limiters().get(j.joint().refusedIndex());
    if (refused.decision().storeFailed()) {
      return new Reply(Problem.STORE_UNAVAILABLE, storeFailed(refused), null).header("Retry-After", retryAfter(j));
    }
    String detail = j.never()
        ? j.permits() + " permits exceed the limit of " + refused.decision().limit() + " of the limiter '"
            + refused.name() + "': this request can never be granted"
        : "the limiter '" + refused.name() + "' has no room for " + j.permits()
            + " permits now; nothing was taken from any limiter";
    Reply reply = new Reply(Problem.DENIED, detail, j);
    if (!j.never()) {
      reply.header("Retry-After", retryAfter(j));
    }
    return reply;
  }

  private static String storeFailed(LimiterDecision refused) {
    return "the store is unavailable, and the limiter '" + refused.name() + "' refuses requests until it"
        + " answers (failure-policy fail-closed)";
  }

  private static String retryAfter(JointLimiterDecision j) {
    return Long.toString(Math.max(1, (j.retryAfterMillis() + 999) / 1000));
  }

  private static Reply named(NamedLimitResult n) {
    boolean over = n.outcome().overall() == Code.OVER_LIMIT;
    Reply reply = over ? new Reply(Problem.DENIED, Json.overMessage(n), n)
        : new Reply(null, null, n);
    if (over) {
      reply.header("Retry-After", Long.toString(Math.max(1, Json.retryAfterSeconds(n))));
    }
    if (n.outcome().statuses().stream().anyMatch(s -> s.storedDiffers())) {
      reply.header("Tally-Limits", "stored-differ");
    }
    return reply;
  }

  /**
   * An RFC 9457 problem: {@code {"type": "about:blank", "title": "Not Found", "status": 404,
   * "detail": "...", "error": "not_found", "message": "..."}}. {@code error} and {@code message}
   * are extension members, kept so that clients written against the first error bodies go on
   * working; {@code message} is always {@code detail}.
   */
  public static Reply error(Problem problem, String message) {
    Reply r = new Reply(problem, message, null);
    if (problem == Problem.SHUTTING_DOWN) {
      // nothing was carried out (an acquire cut short took no permits): send it again
      r.header("Retry-After", "1");
    }
    return r;
  }

  /** The reply for an exception: its problem and message. Bugs are logged with their stack. */
  public static Reply error(Throwable failure) {
    Throwable e = dev.tally.server.async.Stages.unwrap(failure);
    Problem p = Problem.of(e);
    if (p == Problem.INTERNAL) {
      LOG.log(Level.ERROR, "unexpected failure", e);
      return error(p, "internal error (" + e.getClass().getSimpleName() + "); the server log has"
          + " the details");
    }
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return error(p, message);
  }

  Reply header(String name, String value) {
    if (headers.isEmpty()) {
      headers = new LinkedHashMap<>();
    }
    headers.put(name, value);
    return this;
  }

  /** {@code application/json}, or {@code application/problem+json} for every error. */
  public String contentType() {
    return problem == null ? "application/json" : "application/problem+json";
  }

  /** For a limiter decision: the policy that decided (for metrics), else null. */
  String decidingPolicy() {
    return decidingPolicy;
  }

  public int status() {
    return status;
  }

  public Problem problem() {
    return problem;
  }

  public int exitCode() {
    return problem == null ? 0 : problem.exitCode();
  }

  public Object result() {
    return result;
  }

  public String message() {
    return detail;
  }

  /** The body {@code dev.tally.http} rendered, or null if {@link Json#body} writes it. */
  dev.tally.http.Problem rendered() {
    return rendered;
  }

  public Map<String, String> headers() {
    return headers.isEmpty() ? headers : Collections.unmodifiableMap(headers);
  }

  public String json() {
    return new String(bytes(false), java.nio.charset.StandardCharsets.UTF_8);
  }

  /** The body as JSON, its integers as strings if {@code int64Strings} (but a problem's status). */
  byte[] bytes(boolean int64Strings) {
    return Json.body(this, int64Strings);
  }

  @Override
  public String toString() {
    return status + " " + json();
  }
}
