package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.Dialects;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpHeaders;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * docs/openapi.yaml as a judge of real exchanges. {@link #check} finds the operation a request
 * went to (its path template and method) and holds the answer to what the document says of it:
 * the status must be one the operation lists, the content type one that status declares, the
 * body valid against its schema (JSON Schema 2020-12, the OpenAPI 3.1 dialect, every
 * {@code $ref} resolved in the document), every required header field present and every
 * declared one valid. It also holds the request to the document where the server accepted it:
 * a body the server took must match the request schema, a query parameter or
 * {@code Idempotency-Key} it took must be declared. A path no template matches must be answered
 * 404, a method a path does not list 405 with an {@code Allow} that names exactly the listed
 * methods. Every operation checked is recorded, so a test can ask which ones it never reached.
 */
final class OpenApiContract {
  /**
   * Header fields the server sets itself: on an answer whose description does not declare one,
   * it is a deviation. (CORS answer fields and {@code Connection} are described for every route
   * at once, in the document's description.)
   */
  private static final Set<String> OWN_FIELDS = Set.of("ratelimit", "ratelimit-policy",
      "retry-after", "tally-limits", "www-authenticate", "allow", "access-control-allow-methods",
      "access-control-allow-headers", "access-control-max-age");
  private static final List<String> METHODS =
      List.of("get", "head", "post", "put", "delete", "options", "patch", "trace");
  private static final ObjectMapper JSON = new ObjectMapper();
  /**
   * The validator reads the whole document as a schema, so it warns once about every OpenAPI
   * keyword it does not know (info, paths...); kept here so the level set on it stays.
   */
  private static final Logger VALIDATOR_LOG = Logger.getLogger("com.networknt.schema");

  /** One request and its answer, as sent and as received. */
  record Exchange(String method, String target, Map<String, String> requestHeaders,
      String requestBody, int status, HttpHeaders headers, String body) {
    @Override
    public String toString() {
      return method + " " + target + (requestBody == null || requestBody.isEmpty() ? ""
          : " " + abbreviate(requestBody)) + " -> " + status + " " + headers.map() + " "
          + abbreviate(body);
    }

    private static String abbreviate(String s) {
      return s.length() <= 600 ? s : s.substring(0, 600) + "...";
    }
  }

  private record Template(String template, Pattern pattern, int literals) {}

  private final JsonNode spec;
  private final String iri;
  private final SchemaRegistry registry;
  private final List<Template> templates = new ArrayList<>();
  private final Map<String, Schema> schemas = new ConcurrentHashMap<>();
  private final Set<String> exercised = ConcurrentHashMap.newKeySet();

  private OpenApiContract(JsonNode spec, String iri) {
    this.spec = spec;
    this.iri = iri;
    String json;
    try {
      json = JSON.writeValueAsString(spec);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    VALIDATOR_LOG.setLevel(Level.SEVERE);
    // The document is served to the validator under its own address, so every "#/components/..."
    // reference resolves in it, and schemas are addressed by JSON pointer into it.
    this.registry = SchemaRegistry.withDefaultDialect(Dialects.getOpenApi31(),
        b -> b.schemas(Map.of(iri, json)));
    for (Iterator<String> it = spec.get("paths").fieldNames(); it.hasNext(); ) {
      String t = it.next();
      StringBuilder regex = new StringBuilder();
      int literals = 0;
      for (String part : t.split("(?=\\{)|(?<=\\})")) {
        if (part.startsWith("{")) {
          regex.append("[^/]*"); // an empty segment reaches the route, which refuses it (400)
        } else {
          regex.append(Pattern.quote(part));
          literals += part.length();
        }
      }
      templates.add(new Template(t, Pattern.compile(regex.toString()), literals));
    }
  }

  static OpenApiContract load(Path file) {
    try {
      return new OpenApiContract(new YAMLMapper().readTree(file.toFile()), file.toUri().toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The document itself. */
  JsonNode document() {
    return spec;
  }

  /** Every operation of the document, as {@code "GET /v1/counters/{key}"}. */
  Set<String> operations() {
    Set<String> all = new TreeSet<>();
    spec.get("paths").properties().forEach(p -> {
      for (String m : METHODS) {
        if (p.getValue().has(m)) {
          all.add(m.toUpperCase(Locale.ROOT) + " " + p.getKey());
        }
      }
    });
    return all;
  }

  /** The operations {@link #check} has seen answered. */
  Set<String> exercised() {
    return Set.copyOf(exercised);
  }

  /** The path templates of the document. */
  List<String> paths() {
    return templates.stream().map(Template::template).toList();
  }

  /** Holds {@code x} to the document; an {@link AssertionError} names every deviation. */
  void check(Exchange x) {
    List<String> wrong = new ArrayList<>();
    check(x, wrong);
    if (!wrong.isEmpty()) {
      throw new AssertionError("the answer deviates from docs/openapi.yaml:\n  "
          + String.join("\n  ", wrong) + "\nexchange: " + x);
    }
  }

  private void check(Exchange x, List<String> wrong) {
    int q = x.target().indexOf('?');
    String path = q < 0 ? x.target() : x.target().substring(0, q);
    Template t = match(path);
    if (t == null) {
      if (x.status() != 404) {
        wrong.add("no path of the document matches " + path + ", but the server answered "
            + x.status() + " (a path the document does not know must be 404)");
      }
      checkProblem(x, 404, "no_route", wrong);
      return;
    }
    JsonNode item = spec.get("paths").get(t.template());
    String m = x.method().toLowerCase(Locale.ROOT);
    JsonNode op = item.get(m);
    if (op == null) {
      if (x.status() != 405) {
        wrong.add("the document has no " + x.method() + " on " + t.template()
            + ", but the server answered " + x.status() + " (an unlisted method must be 405)");
      }
      Set<String> listed = new TreeSet<>();
      for (String method : METHODS) {
        if (item.has(method)) {
          listed.add(method.toUpperCase(Locale.ROOT));
        }
      }
      Set<String> allow = new TreeSet<>(split(x.headers().firstValue("Allow").orElse("")));
      if (!allow.equals(listed)) {
        wrong.add("Allow says " + allow + " but the document lists " + listed + " for "
            + t.template());
      }
      checkProblem(x, 405, "method_not_allowed", wrong);
      return;
    }
    String operation = x.method().toUpperCase(Locale.ROOT) + " " + t.template();
    exercised.add(operation);
    String where = "/paths/" + escape(t.template()) + "/" + m;
    boolean accepted = x.status() / 100 == 2 || x.status() == 429;
    if (accepted) {
      checkRequest(x, item, op, where, q < 0 ? null : x.target().substring(q + 1), operation,
          wrong);
    }
    JsonNode response = op.get("responses").get(Integer.toString(x.status()));
    if (response == null) {
      wrong.add("status " + x.status() + " is not listed for " + operation + " (it lists "
          + fieldNames(op.get("responses")) + ")");
      return;
    }
    String at = where + "/responses/" + x.status();
    if (response.has("$ref")) {
      at = pointer(response);
      response = resolve(response);
    }
    checkHeaders(x, response, at, operation, wrong);
    checkContent(x, response, at, operation, wrong);
  }

  /** The request, where the server accepted it, against the operation's parameters and body. */
  private void checkRequest(Exchange x, JsonNode item, JsonNode op, String where,
      String rawQuery, String operation, List<String> wrong) {
    Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    headers.putAll(x.requestHeaders());
    Map<String, String> query;
    try {
      query = Requests.query(rawQuery);
    } catch (IllegalArgumentException e) {
      wrong.add("the server accepted a query the document refuses: " + e.getMessage());
      return;
    }
    query.forEach((name, value) -> {
      String at = parameter(item, op, where, "query", name);
      if (at == null) {
        wrong.add("the server accepted query parameter '" + name + "', which " + operation
            + " does not declare");
      } else {
        validate(at + "/schema", scalar(spec.at(at + "/schema"), value), "query parameter '"
            + name + "'", wrong);
      }
    });
    for (String name : List.of("Idempotency-Key")) {
      if (headers.containsKey(name) && parameter(item, op, where, "header", name) == null) {
        wrong.add("the server accepted the " + name + " field, which " + operation
            + " does not declare");
      }
    }
    String body = x.requestBody() == null ? "" : x.requestBody().strip();
    JsonNode requestBody = op.get("requestBody");
    boolean none = body.isEmpty() || body.equals("{}"); // an empty body means {}
    if (none) {
      if (requestBody != null && resolve(requestBody).path("required").asBoolean(false)) {
        wrong.add("the server accepted no body, but " + operation + " requires one");
      }
      return;
    }
    if (requestBody == null) {
      wrong.add("the server accepted a body on " + operation + ", which declares none");
      return;
    }
    String at = where + "/requestBody";
    if (requestBody.has("$ref")) {
      at = pointer(requestBody);
    }
    String type = mediaType(headers.get("Content-Type"));
    if (!resolve(requestBody).path("content").has(type)) {
      wrong.add("the server accepted a " + type + " body, which " + operation + " does not"
          + " declare");
      return;
    }
    validate(at + "/content/" + escape(type) + "/schema", parse(body, wrong), "request body",
        wrong);
  }

  /** The pointer of the parameter {@code name} in {@code in}, on the path or the operation. */
  private String parameter(JsonNode item, JsonNode op, String where, String in, String name) {
    String itemAt = where.substring(0, where.lastIndexOf('/'));
    for (var place : List.of(Map.entry(op, where), Map.entry(item, itemAt))) {
      JsonNode params = place.getKey().path("parameters");
      for (int i = 0; i < params.size(); i++) {
        JsonNode p = params.get(i);
        String at = p.has("$ref") ? pointer(p) : place.getValue() + "/parameters/" + i;
        JsonNode resolved = resolve(p);
        if (resolved.path("in").asText().equals(in)
            && resolved.path("name").asText().equalsIgnoreCase(name)) {
          return at;
        }
      }
    }
    return null;
  }

  private void checkHeaders(Exchange x, JsonNode response, String at, String operation,
      List<String> wrong) {
    JsonNode declared = response.path("headers");
    Set<String> names = new TreeSet<>(String.CASE_INSENSITIVE_ORDER);
    declared.properties().forEach(h -> {
      names.add(h.getKey());
      String hAt = h.getValue().has("$ref") ? pointer(h.getValue())
          : at + "/headers/" + escape(h.getKey());
      JsonNode header = resolve(h.getValue());
      var value = x.headers().firstValue(h.getKey());
      if (value.isEmpty()) {
        if (header.path("required").asBoolean(false)) {
          wrong.add("the required field " + h.getKey() + " is missing");
        }
        return;
      }
      validate(hAt + "/schema", scalar(spec.at(hAt + "/schema"), value.get()), "field "
          + h.getKey(), wrong);
    });
    for (String field : x.headers().map().keySet()) {
      if (OWN_FIELDS.contains(field.toLowerCase(Locale.ROOT)) && !names.contains(field)) {
        wrong.add("the answer carries " + field + ", which the document does not declare for "
            + x.status() + " on " + operation);
      }
    }
  }

  private void checkContent(Exchange x, JsonNode response, String at, String operation,
      List<String> wrong) {
    if (x.method().equalsIgnoreCase("HEAD")) {
      if (!x.body().isEmpty()) {
        wrong.add("a HEAD answer has a body");
      }
      return;
    }
    JsonNode content = response.get("content");
    if (content == null) {
      if (!x.body().isEmpty()) {
        wrong.add("the answer has a body, but the document declares none for " + x.status()
            + " on " + operation);
      }
      return;
    }
    String type = mediaType(x.headers().firstValue("Content-Type").orElse(null));
    if (!content.has(type)) {
      wrong.add("Content-Type " + type + " is not declared for " + x.status() + " on "
          + operation + " (it declares " + fieldNames(content) + ")");
      return;
    }
    JsonNode instance = type.endsWith("json") ? parse(x.body(), wrong)
        : JsonNodeFactory.instance.textNode(x.body());
    if (instance != null) {
      validate(at + "/content/" + escape(type) + "/schema", instance, "body", wrong);
      if (x.target().matches(".*[?&]int64=string(&.*)?")) {
        integersLeft(instance, "", wrong);
      }
    }
  }

  /** With {@code int64=string} every integer is a string, but a problem's {@code status}. */
  private static void integersLeft(JsonNode node, String path, List<String> wrong) {
    if (node.isIntegralNumber() && !path.equals("/status")) {
      wrong.add("int64=string, yet " + path + " is the number " + node);
    }
    node.properties().forEach(e -> integersLeft(e.getValue(), path + "/" + e.getKey(), wrong));
    for (int i = 0; node.isArray() && i < node.size(); i++) {
      integersLeft(node.get(i), path + "/" + i, wrong);
    }
  }

  /** A problem answer that no operation describes (an unknown path, an unlisted method). */
  private void checkProblem(Exchange x, int status, String error, List<String> wrong) {
    if (!mediaType(x.headers().firstValue("Content-Type").orElse(null))
        .equals("application/problem+json")) {
      wrong.add("a " + status + " must be application/problem+json");
      return;
    }
    JsonNode body = parse(x.body(), wrong);
    if (body != null) {
      validate("/components/schemas/Problem", body, "body", wrong);
      if (!body.path("error").asText().equals(error)) {
        wrong.add("a " + status + " must say error " + error);
      }
    }
  }

  private void validate(String pointer, JsonNode instance, String what, List<String> wrong) {
    if (instance == null) {
      return;
    }
    Schema schema = schemas.computeIfAbsent(pointer,
        p -> registry.getSchema(SchemaLocation.of(iri + "#" + p)));
    for (var e : schema.validate(instance)) {
      wrong.add(what + ": " + e + " (schema " + pointer + ")");
    }
  }

  /** A parameter or header value as the JSON its schema types it as. */
  private static JsonNode scalar(JsonNode schema, String value) {
    if (schema.path("type").asText().equals("integer")) {
      try {
        return JsonNodeFactory.instance.numberNode(Long.parseLong(value.strip()));
      } catch (NumberFormatException notAnInteger) {
        return JsonNodeFactory.instance.textNode(value); // and the schema says why not
      }
    }
    return JsonNodeFactory.instance.textNode(value);
  }

  private static JsonNode parse(String text, List<String> wrong) {
    try {
      return JSON.readTree(text);
    } catch (IOException e) {
      wrong.add("not JSON: " + e.getMessage());
      return null;
    }
  }

  private Template match(String path) {
    Template best = null;
    for (Template t : templates) {
      if (t.pattern().matcher(path).matches() && (best == null || t.literals() > best.literals())) {
        best = t; // a literal path wins over a templated one, as OpenAPI has it
      }
    }
    return best;
  }

  private JsonNode resolve(JsonNode node) {
    JsonNode n = node;
    while (n.has("$ref")) {
      n = spec.at(pointer(n));
    }
    return n;
  }

  private static String pointer(JsonNode ref) {
    String r = ref.get("$ref").asText();
    if (!r.startsWith("#")) {
      throw new IllegalStateException("only references within the document are expected: " + r);
    }
    return r.substring(1);
  }

  private static String escape(String token) {
    return token.replace("~", "~0").replace("/", "~1");
  }

  private static String mediaType(String contentType) {
    if (contentType == null) {
      return "(none)";
    }
    int semi = contentType.indexOf(';');
    return (semi < 0 ? contentType : contentType.substring(0, semi)).strip()
        .toLowerCase(Locale.ROOT);
  }

  private static List<String> split(String list) {
    return java.util.Arrays.stream(list.split(",", -1)).map(String::strip)
        .filter(s -> !s.isEmpty()).toList();
  }

  private static String fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names.stream().collect(Collectors.joining(", "));
  }
}
