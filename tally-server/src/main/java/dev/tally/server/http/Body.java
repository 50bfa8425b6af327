package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.Durations;
import dev.tally.server.app.RequestException;
import java.time.Duration;
import java.util.Iterator;
import java.util.Set;
import java.util.function.Predicate;

/**
 * A JSON request object read strictly: unknown fields, wrong types and out-of-range numbers are
 * refused with a message naming the field and what it should hold.
 */
record Body(ObjectNode node, String where) {
  /** Parses {@code bytes}, allowing only {@code fields}; {@code example} shows a good body. */
  static Body parse(byte[] bytes, String example, Set<String> fields) {
    return of(Json.parseObject(bytes, example), "", fields);
  }

  /** Wraps a nested object; {@code where} prefixes field names in messages (e.g. "ops[2]."). */
  static Body of(ObjectNode node, String where, Set<String> fields) {
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!fields.contains(f)) {
        throw new RequestException("unknown field '" + where + f + "'; expected "
            + (fields.isEmpty() ? "an empty body" : "one of " + String.join(", ", sorted(fields))));
      }
    }
    return new Body(node, where);
  }

  private static Iterable<String> sorted(Set<String> s) {
    return s.stream().sorted().toList();
  }

  boolean has(String field) {
    return present(field) != null;
  }

  /** The field's value, or null if it is absent or JSON null. */
  private JsonNode present(String field) {
    JsonNode n = node.get(field);
    return n == null || n.isNull() ? null : n;
  }

  JsonNode raw(String field) {
    return node.get(field);
  }

  /** An integer ({@code Long}) or a finite decimal ({@code Double}); {@code dflt} if absent. */
  Number number(String field, Number dflt) {
    JsonNode n = present(field);
    if (n == null) {
      return dflt;
    }
    if (n.isIntegralNumber()) {
      if (!n.canConvertToLong()) {
        throw new RequestException("'" + where + field + "' is " + n.asText()
            + ", outside the signed 64-bit range");
      }
      return n.longValue();
    }
    if (n.isFloatingPointNumber()) {
      if (!Double.isFinite(n.doubleValue())) {
        throw new RequestException("'" + where + field + "' must be a finite number, not "
            + n.asText());
      }
      return n.doubleValue();
    }
    throw new RequestException("'" + where + field + "' must be a number like 5 or 0.5, not "
        + Json.string(n));
  }

  long integer(String field, long dflt) {
    Number n = number(field, dflt);
    if (n instanceof Double) {
      throw new RequestException("'" + where + field + "' must be an integer, not " + n);
    }
    return n.longValue();
  }

  boolean bool(String field, boolean dflt) {
    JsonNode n = typed(field, JsonNode::isBoolean, "true or false");
    return n == null ? dflt : n.booleanValue();
  }

  String string(String field) {
    JsonNode n = typed(field, JsonNode::isTextual, "a string");
    return n == null ? null : n.textValue();
  }

  /** The field's value, null if absent or JSON null; refused unless {@code is} holds for it. */
  private JsonNode typed(String field, Predicate<JsonNode> is, String what) {
    JsonNode n = present(field);
    if (n != null && !is.test(n)) {
      throw new RequestException("'" + where + field + "' must be " + what + ", not " + Json.string(n));
    }
    return n;
  }

  String requiredString(String field, String example) {
    return require(field, ", e.g. " + example).string(field);
  }

  long requiredInteger(String field, String why) {
    return require(field, why).integer(field, 0);
  }

  Number requiredNumber(String field, String why) {
    return require(field, why).number(field, null);
  }

  /** This body, if {@code field} is given; else "missing field", and {@code why} says what it holds. */
  private Body require(String field, String why) {
    if (!has(field)) {
      throw new RequestException("missing field '" + where + field + "'" + why);
    }
    return this;
  }

  Duration duration(String field) {
    JsonNode n = present(field);
    if (n == null) {
      return null;
    }
    if (!n.isTextual()) {
      throw new RequestException("'" + where + field + "' must be a string: " + Durations.HINT);
    }
    try {
      return Durations.parse(n.textValue());
    } catch (IllegalArgumentException e) {
      throw new RequestException("'" + where + field + "': " + e.getMessage());
    }
  }
}
