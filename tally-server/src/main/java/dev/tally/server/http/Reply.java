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

  private Reply(int status, Problem problem, ObjectNode body) {
    this.status = status;
    this.problem = problem;
    this.body = body;
  }

  static Reply ok(ObjectNode body) {
    return new Reply(200, null, body);
  }

  /** A reply for {@code problem} whose body is {@code body} (a denied decision, an unhealthy store). */
  static Reply of(Problem problem, ObjectNode body) {
    return new Reply(problem.status(), problem, body);
  }

  /** A JSON error: {@code {"error": "not_found", "message": "..."}}. */
  public static Reply error(Problem problem, String message) {
    ObjectNode body = Json.object();
    body.put("error", problem.code());
    body.put("message", message);
    return new Reply(problem.status(), problem, body);
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

  Reply header(String name, String value) {
    if (headers.isEmpty()) {
      headers = new LinkedHashMap<>();
    }
    headers.put(name, value);
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
    return Collections.unmodifiableMap(headers);
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
