package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.LimitSpec;
import dev.tally.server.app.RequestException;
import dev.tally.server.app.TallyApp;
import dev.tally.server.app.TxOp;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Reading what HTTP requests carry: path segments, query parameters, limit and op objects. */
final class Requests {
  static final Set<String> LIMIT_FIELDS = Set.of("limit", "limits", "version");
  private static final String LIMIT_EXAMPLE = "{\"limit\": {\"tokenBucket\": \"100/1m\"}}";

  private Requests() {}

  /**
   * Percent-decodes one path segment or query value as strict UTF-8. {@code +} stays a plus: a
   * space is {@code %20}.
   */
  static String decode(String raw, String what) {
    if (raw.indexOf('%') < 0) {
      return raw;
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '%') {
        int hi = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
        int lo = hi < 0 ? -1 : Character.digit(raw.charAt(i + 2), 16);
        if (lo < 0) {
          throw new RequestException(what + " has a bad percent-escape at '"
              + raw.substring(i, Math.min(raw.length(), i + 3)) + "'; encode '%' as %25");
        }
        bytes.write(hi << 4 | lo);
        i += 2;
      } else {
        byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
        bytes.write(b, 0, b.length);
      }
    }
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes.toByteArray()))
          .toString();
    } catch (CharacterCodingException e) {
      throw new RequestException(what + " is not valid UTF-8 once percent-decoded");
    }
  }

  /** The query parameters, decoded; a repeated name is refused. */
  static Map<String, String> query(String rawQuery) {
    if (rawQuery == null || rawQuery.isEmpty()) {
      return Map.of();
    }
    Map<String, String> params = new HashMap<>();
    for (String pair : rawQuery.split("&", -1)) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq), "query parameter name");
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1), "query parameter '" + name + "'");
      if (params.put(name, value) != null) {
        throw new RequestException("query parameter '" + name + "' is given twice");
      }
    }
    return params;
  }

  /**
   * {@code app} with the limits' {@code "version"} the request gives, if any: see
   * {@link TallyApp#withLimitsVersion}.
   */
  static TallyApp versioned(TallyApp app, Body body) {
    return app.withLimitsVersion(body.integer("version", 0));
  }

  /**
   * The limits of a limiter request: {@code "limit": {...}} or {@code "limits": [{...}, ...]},
   * each object one algorithm plus an optional {@code "policy"} name for the
   * {@code RateLimit} header fields (default {@code "default"}, then {@code "limit-2"}...).
   */
  static List<LimitSpec> limits(Body body) {
    JsonNode one = body.raw("limit");
    JsonNode many = body.raw("limits");
    if (one != null && many != null) {
      throw new RequestException("give either 'limit' or 'limits', not both");
    }
    List<LimitSpec> specs = new ArrayList<>();
    if (one != null && !one.isNull()) {
      specs.add(limit(one, "limit", 0));
    } else if (many != null && !many.isNull()) {
      if (!many.isArray() || many.isEmpty()) {
        throw new RequestException("'limits' must be a non-empty array like [{\"tokenBucket\":"
            + " \"100/1m\"}, {\"tokenBucket\": \"10/1s\"}]");
      }
      for (int i = 0; i < many.size(); i++) {
        specs.add(limit(many.get(i), "limits[" + i + "]", i));
      }
    } else {
      throw new RequestException("missing 'limit', e.g. " + LIMIT_EXAMPLE);
    }
    Set<String> names = new HashSet<>();
    for (LimitSpec s : specs) {
      if (!names.add(s.name())) {
        throw new RequestException("policy name '" + s.name() + "' is used twice");
      }
    }
    return specs;
  }

  private static LimitSpec limit(JsonNode node, String where, int index) {
    ObjectNode o = object(node, where, "like {\"tokenBucket\": \"100/1m\"}");
    String policy = index == 0 ? "default" : "limit-" + (index + 1);
    LimitSpec.Kind kind = null;
    String text = null;
    for (var f : o.properties()) {
      if (f.getKey().equals("policy")) {
        if (!f.getValue().isTextual()) {
          throw new RequestException("'" + where + ".policy' must be a string");
        }
        policy = f.getValue().textValue();
        continue;
      }
      LimitSpec.Kind k = LimitSpec.Kind.ofFieldName(f.getKey());
      if (k == null) {
        throw new RequestException("unknown field '" + where + "." + f.getKey()
            + "'; expected one of " + LimitSpec.Kind.fieldNames() + ", policy");
      }
      if (kind != null) {
        throw new RequestException("'" + where + "' has two algorithms; put each in its own"
            + " object of 'limits'");
      }
      if (!f.getValue().isTextual()) {
        throw new RequestException("'" + where + "." + f.getKey() + "' must be a string like \""
            + k.example().split(" ", -1)[0] + "\"");
      }
      kind = k;
      text = f.getValue().textValue();
    }
    if (kind == null) {
      throw new RequestException("'" + where + "' names no algorithm; expected one of "
          + LimitSpec.Kind.fieldNames());
    }
    try {
      return LimitSpec.parse(kind, text, policy);
    } catch (IllegalArgumentException e) {
      throw new RequestException("'" + where + "': " + e.getMessage());
    }
  }

  /** {@code node} as an object, else an error: {@code 'WHERE' must be an object SHAPE}. */
  static ObjectNode object(JsonNode node, String where, String shape) {
    if (!node.isObject()) {
      throw new RequestException("'" + where + "' must be an object " + shape);
    }
    return (ObjectNode) node;
  }

  static final Set<String> OP_FIELDS =
      Set.of("op", "key", "delta", "default", "value", "ttl", "mustExist");

  static final int MAX_JOINT_LIMITERS = 100;

  /**
   * The limiters of a joint decision: {@code "limiters": [{"name": ..., "limit" or "limits": ...,
   * "version": ...}, ...]}, each as a single limiter's request gives its limits.
   */
  static List<TallyApp.JointLimiter> jointLimiters(Body body) {
    JsonNode list = body.raw("limiters");
    if (list == null || !list.isArray() || list.isEmpty()) {
      throw new RequestException("expected a non-empty array 'limiters', e.g. {\"limiters\": [{\"name\":"
          + " \"user:42\", \"limit\": {\"tokenBucket\": \"100/1m\"}}, ...]}");
    }
    if (list.size() > MAX_JOINT_LIMITERS) {
      throw new RequestException("a joint decision takes at most " + MAX_JOINT_LIMITERS + " limiters, not "
          + list.size());
    }
    List<TallyApp.JointLimiter> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      String where = "limiters[" + i + "].";
      Body l = Body.of(object(list.get(i), "limiters[" + i + "]", "like {\"name\": \"user:42\","
          + " \"limit\": {\"tokenBucket\": \"100/1m\"}}"), where, JOINT_LIMITER_FIELDS);
      long version = l.integer("version", 0);
      if (version < 0) {
        throw new RequestException("'" + where + "version' must be from 0 to 2^45 - 1, not " + version);
      }
      out.add(new TallyApp.JointLimiter(l.requiredString("name", "\"user:42\""), limits(l), version));
    }
    return out;
  }

  private static final Set<String> JOINT_LIMITER_FIELDS = Set.of("name", "limit", "limits", "version");

  static List<TxOp> ops(Body body) {
    JsonNode ops = body.raw("ops");
    if (ops == null || !ops.isArray()) {
      throw new RequestException("expected {\"ops\": [{\"op\": \"incr\", \"key\": \"a\"}, ...]}");
    }
    List<TxOp> list = new ArrayList<>(ops.size());
    for (int i = 0; i < ops.size(); i++) {
      String where = "ops[" + i + "].";
      ObjectNode item = object(ops.get(i), "ops[" + i + "]", "like {\"op\": \"incr\", \"key\": \"a\"}");
      Body o = Body.of(item, where, OP_FIELDS);
      String op = o.requiredString("op", "\"incr\"");
      String key = o.requiredString("key", "\"views\"");
      Set<String> allowed = switch (op) {
        case "incr", "decr" -> Set.of("op", "key", "delta", "default", "mustExist");
        case "put" -> Set.of("op", "key", "value", "ttl");
        case "delete", "get" -> Set.of("op", "key");
        default -> throw new RequestException("'" + where + "op' is '" + op
            + "'; expected incr, decr, put, delete or get");
      };
      Body.of(item, where, allowed);
      Number value = op.equals("put") ? o.requiredNumber("value", "") : null;
      list.add(new TxOp(op, key, o.number("delta", 1L), o.number("default", 0L), value,
          o.duration("ttl"), o.bool("mustExist", false)));
    }
    return list;
  }
}
