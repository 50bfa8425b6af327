package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;

/**
 * The common shapes of request and answer bodies read and written without Jackson's streaming
 * machinery, which costs more per request than the rest of an increment: a parser, a generator,
 * their contexts and buffers. Each method handles a strict subset of JSON exactly as Jackson
 * would (the same nodes, the same bytes) and returns null for anything else, for which
 * {@link Json} asks Jackson, so its answers and error messages are unchanged: strings of
 * printable ASCII without escapes, integers of at most 18 digits, {@code true}, {@code false},
 * {@code null}, objects and arrays of these.
 */
final class FastJson {
  /** Deeper documents go to Jackson, which enforces its own nesting bound. */
  private static final int MAX_DEPTH = 32;
  private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[256]);

  private final byte[] in;
  private int at;

  private FastJson(byte[] in) {
    this.in = in;
  }

  // ------------------------------------------------------------------ reading

  /** {@code body} as an object, or null if it is not of the shapes above (or not valid). */
  static ObjectNode parseObject(byte[] body) {
    FastJson p = new FastJson(body);
    p.skipSpace();
    if (p.at >= body.length || body[p.at] != '{') {
      return null;
    }
    JsonNode node = p.value(0);
    if (node == null) {
      return null;
    }
    p.skipSpace();
    return p.at == body.length ? (ObjectNode) node : null;
  }

  private void skipSpace() {
    while (at < in.length) {
      byte b = in[at];
      if (b != ' ' && b != '\n' && b != '\r' && b != '\t') {
        return;
      }
      at++;
    }
  }

  private JsonNode value(int depth) {
    if (at >= in.length || depth > MAX_DEPTH) {
      return null;
    }
    switch (in[at]) {
      case '{' -> {
        return object(depth);
      }
      case '[' -> {
        return array(depth);
      }
      case '"' -> {
        String s = string();
        return s == null ? null : Json.NODES.textNode(s);
      }
      case 't' -> {
        return literal("true") ? Json.NODES.booleanNode(true) : null;
      }
      case 'f' -> {
        return literal("false") ? Json.NODES.booleanNode(false) : null;
      }
      case 'n' -> {
        return literal("null") ? Json.NODES.nullNode() : null;
      }
      default -> {
        return integer();
      }
    }
  }

  private ObjectNode object(int depth) {
    at++; // {
    ObjectNode node = Json.object();
    skipSpace();
    if (at < in.length && in[at] == '}') {
      at++;
      return node;
    }
    while (true) {
      skipSpace();
      if (at >= in.length || in[at] != '"') {
        return null;
      }
      String name = string();
      if (name == null) {
        return null;
      }
      skipSpace();
      if (at >= in.length || in[at] != ':') {
        return null;
      }
      at++;
      skipSpace();
      JsonNode v = value(depth + 1);
      if (v == null || node.has(name)) { // a duplicate is an error Jackson words
        return null;
      }
      node.set(name, v);
      skipSpace();
      if (at >= in.length) {
        return null;
      }
      byte b = in[at++];
      if (b == '}') {
        return node;
      }
      if (b != ',') {
        return null;
      }
    }
  }

  private ArrayNode array(int depth) {
    at++; // [
    ArrayNode node = Json.NODES.arrayNode();
    skipSpace();
    if (at < in.length && in[at] == ']') {
      at++;
      return node;
    }
    while (true) {
      skipSpace();
      JsonNode v = value(depth + 1);
      if (v == null) {
        return null;
      }
      node.add(v);
      skipSpace();
      if (at >= in.length) {
        return null;
      }
      byte b = in[at++];
      if (b == ']') {
        return node;
      }
      if (b != ',') {
        return null;
      }
    }
  }

  /** A string of printable ASCII without escapes, the opening quote at {@code at}; else null. */
  private String string() {
    int start = ++at;
    while (at < in.length) {
      byte b = in[at];
      if (b == '"') {
        String s = new String(in, start, at - start, StandardCharsets.ISO_8859_1);
        at++;
        return s;
      }
      if (b < 0x20 || b > 0x7e || b == '\\') {
        return null;
      }
      at++;
    }
    return null;
  }

  private boolean literal(String word) {
    int end = at + word.length();
    if (end > in.length) {
      return false;
    }
    for (int i = 0; i < word.length(); i++) {
      if (in[at + i] != word.charAt(i)) {
        return false;
      }
    }
    if (end < in.length && !delimiter(in[end])) {
      return false;
    }
    at = end;
    return true;
  }

  private static boolean delimiter(byte b) {
    return b == ',' || b == '}' || b == ']' || b == ' ' || b == '\n' || b == '\r' || b == '\t';
  }

  /**
   * An integer of 1 to 18 digits, no leading zero, no fraction or exponent: an int node if it
   * fits an int, else a long node, as Jackson reads it; else null.
   */
  private JsonNode integer() {
    int i = at;
    boolean negative = in[i] == '-';
    if (negative) {
      i++;
    }
    int first = i;
    long v = 0;
    while (i < in.length && in[i] >= '0' && in[i] <= '9') {
      v = v * 10 + (in[i] - '0');
      i++;
    }
    int digits = i - first;
    if (digits == 0 || digits > 18 || (digits > 1 && in[first] == '0')) {
      return null;
    }
    if (i < in.length && !delimiter(in[i])) {
      return null; // a fraction, an exponent, or not a number
    }
    at = i;
    if (negative) {
      v = -v;
    }
    return v == (int) v ? Json.NODES.numberNode((int) v) : Json.NODES.numberNode(v);
  }

  // ------------------------------------------------------------------ writing

  /** {@code node} as compact JSON, byte for byte what Jackson writes; null if not of the shapes. */
  static byte[] write(JsonNode node) {
    Out out = new Out(SCRATCH.get());
    if (!out.value(node, 0)) {
      return null;
    }
    if (out.buf.length > 64 * 1024) {
      SCRATCH.remove(); // do not keep a large answer's buffer for ever
    } else {
      SCRATCH.set(out.buf);
    }
    return Arrays.copyOf(out.buf, out.len);
  }

  private static final class Out {
    byte[] buf;
    int len;

    Out(byte[] buf) {
      this.buf = buf;
    }

    private void room(int n) {
      if (len + n > buf.length) {
        buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
      }
    }

    private void put(byte b) {
      room(1);
      buf[len++] = b;
    }

    private void ascii(String s) {
      room(s.length());
      for (int i = 0; i < s.length(); i++) {
        buf[len++] = (byte) s.charAt(i);
      }
    }

    private boolean string(String s) {
      room(s.length() + 2);
      buf[len++] = '"';
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        if (c < 0x20 || c > 0x7e) {
          return false; // Jackson's escapes and UTF-8 are Jackson's to write
        }
        if (c == '"' || c == '\\') {
          room(s.length() - i + 2);
          buf[len++] = '\\';
        }
        buf[len++] = (byte) c;
      }
      put((byte) '"');
      return true;
    }

    boolean value(JsonNode n, int depth) {
      if (depth > MAX_DEPTH) {
        return false;
      }
      JsonNodeType type = n.getNodeType();
      switch (type) {
        case OBJECT -> {
          put((byte) '{');
          boolean first = true;
          for (Map.Entry<String, JsonNode> e : n.properties()) {
            if (!first) {
              put((byte) ',');
            }
            first = false;
            if (!string(e.getKey())) {
              return false;
            }
            put((byte) ':');
            if (!value(e.getValue(), depth + 1)) {
              return false;
            }
          }
          put((byte) '}');
          return true;
        }
        case ARRAY -> {
          put((byte) '[');
          for (int i = 0; i < n.size(); i++) {
            if (i > 0) {
              put((byte) ',');
            }
            if (!value(n.get(i), depth + 1)) {
              return false;
            }
          }
          put((byte) ']');
          return true;
        }
        case STRING -> {
          return string(n.textValue());
        }
        case BOOLEAN -> {
          ascii(n.booleanValue() ? "true" : "false");
          return true;
        }
        case NULL -> {
          ascii("null");
          return true;
        }
        case NUMBER -> {
          if (n.isInt() || n.isLong()) {
            ascii(Long.toString(n.longValue()));
            return true;
          }
          if (n.isDouble() && Double.isFinite(n.doubleValue())) {
            ascii(Double.toString(n.doubleValue()));
            return true;
          }
          return false;
        }
        default -> {
          return false;
        }
      }
    }
  }
}
