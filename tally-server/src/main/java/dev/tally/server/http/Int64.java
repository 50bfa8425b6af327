package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;

/**
 * 64-bit integers as strings, for JavaScript: a JSON number beyond 2^53 loses its last digits
 * in {@code JSON.parse}. A client asks with the query parameter {@code int64=string} on any
 * route; then every integer in the body (values, remaining, limits, milliseconds...) is a
 * decimal string, and only the {@code status} member of a problem stays a number, as RFC 9457
 * defines it. {@code int64=number} is the default.
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

  /** A copy of {@code body} whose integers are strings (but a problem's status). */
  static JsonNode asStrings(JsonNode body) {
    JsonNode copy = convert(body);
    if (copy instanceof ObjectNode o && body.has("status") && body.get("status").isInt()
        && body.has("type")) {
      o.set("status", body.get("status"));
    }
    return copy;
  }

  private static JsonNode convert(JsonNode n) {
    if (n.isIntegralNumber()) {
      return Json.NODES.textNode(n.asText());
    }
    if (n instanceof ObjectNode o) {
      ObjectNode out = Json.object();
      o.properties().forEach(e -> out.set(e.getKey(), convert(e.getValue())));
      return out;
    }
    if (n instanceof ArrayNode a) {
      ArrayNode out = Json.NODES.arrayNode(a.size());
      a.forEach(e -> out.add(convert(e)));
      return out;
    }
    return n;
  }
}
