package dev.tally.server.http;

import dev.tally.server.app.RequestException;
import java.util.Map;

/**
 * 64-bit integers as strings, for JavaScript: a JSON number beyond 2^53 loses its last digits
 * in {@code JSON.parse}. A client asks with the query parameter {@code int64=string} on any
 * route; then every integer in the body (values, remaining, limits, milliseconds...) is a
 * decimal string ({@link Json#body}), and only the {@code status} member of a problem stays a
 * number, as RFC 9457 defines it. {@code int64=number} is the default.
 */
final class Int64 {
  static final String PARAMETER = "int64";

  private Int64() {}

  /** Whether the query asks for strings; a value other than string or number is refused. */
  static boolean asStrings(Map<String, String> query) {
    String v = query.get(PARAMETER);
    if (v == null || v.equals("number")) {
      return false;
    }
    if (v.equals("string")) {
      return true;
    }
    throw new RequestException("int64 must be 'string' (64-bit integers as JSON strings) or"
        + " 'number' (the default), not '" + v + "'");
  }
}
