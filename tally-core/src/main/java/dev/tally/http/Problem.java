package dev.tally.http;

import dev.tally.Decision;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * An RFC 9457 {@code application/problem+json} body, written as JSON text: the members
 * {@code type}, {@code title}, {@code status} and {@code detail}, then extension members in the
 * order they were added. A member added again keeps its place and takes the new value.
 *
 * <pre>{@code
 * RateLimitFields f = RateLimitFields.of(decision, policies);
 * String body = Problem.quotaExceeded("the limiter 'api:42' has no room for 1 permits now")
 *     .decision("api:42", 1, decision)
 *     .violatedPolicies(f)
 *     .toJson();
 * }</pre>
 */
public final class Problem {
  /** The problem type the RateLimit draft defines for a request over its quota. */
  public static final String QUOTA_EXCEEDED_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";
  /** The title the draft gives that problem type. */
  public static final String QUOTA_EXCEEDED_TITLE = "Request cannot be satisfied as assigned quota has been exceeded";
  /** The media type of a problem body. */
  public static final String MEDIA_TYPE = "application/problem+json";

  private final int status;
  // Each member's value as JSON text, in insertion order.
  private final Map<String, String> members = new LinkedHashMap<>();

  private Problem(int status, String type, String title, String detail) {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("an HTTP status is 100 to 599, not " + status);
    }
    this.status = status;
    member("type", Objects.requireNonNull(type, "type"));
    member("title", Objects.requireNonNull(title, "title"));
    member("status", status);
    member("detail", Objects.requireNonNull(detail, "detail"));
  }

  /** A problem of any status and type. */
  public static Problem of(int status, String type, String title, String detail) {
    return new Problem(status, type, title, detail);
  }

  /** 429, the draft's quota-exceeded type. */
  public static Problem quotaExceeded(String detail) {
    return new Problem(429, QUOTA_EXCEEDED_TYPE, QUOTA_EXCEEDED_TITLE, detail);
  }

  /**
   * 503 {@code about:blank} "Service Unavailable": the store did not decide. The answer of a
   * fail-closed rule during an outage, which no quota of the client's explains.
   */
  public static Problem storeUnavailable(String detail) {
    return new Problem(503, "about:blank", "Service Unavailable", detail);
  }

  /** The HTTP status. */
  public int status() {
    return status;
  }

  public Problem member(String name, String value) {
    members.put(Objects.requireNonNull(name, "name"), value == null ? "null" : string(value));
    return this;
  }

  public Problem member(String name, long value) {
    members.put(Objects.requireNonNull(name, "name"), Long.toString(value));
    return this;
  }

  public Problem member(String name, boolean value) {
    members.put(Objects.requireNonNull(name, "name"), Boolean.toString(value));
    return this;
  }

  /** An array of strings. */
  public Problem member(String name, List<String> values) {
    StringBuilder b = new StringBuilder("[");
    for (String v : values) {
      b.append(b.length() == 1 ? "" : ",").append(string(v));
    }
    members.put(Objects.requireNonNull(name, "name"), b.append(']').toString());
    return this;
  }

  /**
   * A limiter decision's members, as tally-server has always sent them: {@code name},
   * {@code allowed}, {@code permits}, {@code remaining}, {@code limit},
   * {@code retryAfterMillis} (null if the request can never be granted) and
   * {@code resetAfterMillis}, durations rounded up.
   */
  public Problem decision(String name, long permits, Decision d) {
    member("name", name);
    member("allowed", d.allowed());
    member("permits", permits);
    member("remaining", d.remaining());
    member("limit", d.limit());
    if (!d.allowed() && d.retryAfterNanos() == Decision.NEVER) {
      member("retryAfterMillis", (String) null);
    } else {
      member("retryAfterMillis", RateLimitFields.ceilMillis(d.retryAfterNanos()));
    }
    return member("resetAfterMillis", RateLimitFields.ceilMillis(d.resetAfterNanos()));
  }

  /** The draft's {@code violated-policies}: the policies of {@code fields} that denied. */
  public Problem violatedPolicies(RateLimitFields fields) {
    return member("violated-policies", fields.violatedPolicies());
  }

  /** The body. */
  public String toJson() {
    StringBuilder b = new StringBuilder("{");
    members.forEach((name, value) -> b.append(b.length() == 1 ? "" : ",").append(string(name)).append(':').append(value));
    return b.append('}').toString();
  }

  @Override
  public String toString() {
    return toJson();
  }

  /** {@code s} as a JSON string: quotes, backslashes and control characters escaped. */
  static String string(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c == '\u2028' || c == '\u2029') {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
