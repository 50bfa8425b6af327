package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.System.Logger.Level;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The answer to one operation, as both front ends give it: a JSON body, the HTTP status, the
 * {@link Problem} if it did not succeed (hence the exit code), and any header fields
 * ({@code RateLimit}, {@code Retry-After}). The command line's {@code --json} output is the body
 * the HTTP API would send.
 */
public final class Reply {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");

  private final int status;
  private final Problem problem;
  private final ObjectNode body;
  private Map<String, String> headers = Map.of();
  private String decidingPolicy;

  private Reply(int status, Problem problem, ObjectNode body) {
    this.status = status;
    this.problem = problem;
    this.body = body;
  }

  static Reply ok(ObjectNode body) {
    return new Reply(200, null, body);
  }

  /**
   * A reply for {@code problem} whose body is {@code body} (an unhealthy store), made an RFC 9457
   * problem by the members every problem has.
   */
  static Reply of(Problem problem, ObjectNode body) {
    ObjectNode b = problemMembers(problem, body.has("message") ? body.get("message").asText()
        : problem.title());
    b.setAll(body);
    return new Reply(problem.status(), problem, b);
  }

  /**
   * A denied decision: the decision's fields, with the RFC 9457 members of the quota-exceeded
   * problem type of draft-ietf-httpapi-ratelimit-headers.
   */
  static Reply denied(ObjectNode decision) {
    ObjectNode b = problemMembers(Problem.DENIED, decision.has("message")
        ? decision.get("message").asText() : "the limiter '" + decision.get("name").asText()
        + "' has no room for " + decision.get("permits").asLong() + " permits now");
    b.setAll(decision);
    return new Reply(Problem.DENIED.status(), Problem.DENIED, b);
  }

  /**
   * An RFC 9457 problem: {@code {"type": "about:blank", "title": "Not Found", "status": 404,
   * "detail": "...", "error": "not_found", "message": "..."}}. {@code error} and {@code message}
   * are extension members, kept so that clients written against the first error bodies go on
   * working; {@code message} is always {@code detail}.
   */
  public static Reply error(Problem problem, String message) {
    return new Reply(problem.status(), problem, problemMembers(problem, message));
  }

  /**
   * 503 {@code shutting_down}, with {@code Retry-After: 1}: the request was not carried out (an
   * acquire cut short took no permits), so the client may send it again, to another instance or
   * to this one once it is back.
   */
  static Reply shuttingDown() {
    return error(Problem.SHUTTING_DOWN, "the server is shutting down; retry elsewhere")
        .header("Retry-After", "1");
  }

  private static ObjectNode problemMembers(Problem problem, String detail) {
    ObjectNode body = Json.object();
    body.put("type", problem.type());
    body.put("title", problem.title());
    body.put("status", problem.status());
    body.put("detail", detail);
    body.put("error", problem.code());
    body.put("message", detail);
    return body;
  }

  /** The reply for an exception: its problem and message. Bugs are logged with their stack. */
  public static Reply error(Throwable e) {
    Problem p = Problem.of(e);
    if (p == Problem.INTERNAL) {
      LOG.log(Level.ERROR, "unexpected failure", e);
      return error(p, "internal error (" + e.getClass().getSimpleName() + "); the server log has"
          + " the details");
    }
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return error(p, message);
  }

  Reply withField(String name, long value) {
    body.put(name, value);
    return this;
  }

  Reply withArray(String name, Iterable<String> values) {
    var array = body.putArray(name);
    values.forEach(array::add);
    return this;
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

  Reply decidingPolicy(String policy) {
    this.decidingPolicy = policy;
    return this;
  }

  /** The HTTP status. */
  public int status() {
    return status;
  }

  /** Why it did not succeed, or null if it did. */
  public Problem problem() {
    return problem;
  }

  /** The exit code the command line ends with. */
  public int exitCode() {
    return problem == null ? 0 : problem.exitCode();
  }

  /** The JSON body. */
  public JsonNode body() {
    return body;
  }

  /** The {@code message} of an error body, or null. */
  public String message() {
    JsonNode m = body.get("message");
    return m == null ? null : m.asText();
  }

  /** Header fields to send with it, in order. */
  public Map<String, String> headers() {
    return headers.isEmpty() ? headers : Collections.unmodifiableMap(headers);
  }

  /** The body as compact JSON text. */
  public String json() {
    return Json.string(body);
  }

  byte[] bytes() {
    return Json.bytes(body);
  }

  @Override
  public String toString() {
    return status + " " + json();
  }
}
