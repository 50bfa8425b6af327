package dev.tally.server.ratelimit;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.tally.server.ratelimit.RuleSet.KeyRules;
import dev.tally.server.ratelimit.RuleSet.Level;
import dev.tally.server.ratelimit.RuleSet.Node;
import dev.tally.server.ratelimit.RuleSet.Wildcard;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads one rules file in envoyproxy/ratelimit's YAML format (docs/envoy.md has an example).
 *
 * <p>Stricter than envoyproxy/ratelimit where its leniency hides mistakes: every error names the
 * file and line, keys are checked per level (a {@code unit} beside {@code key} is refused, not
 * ignored), a {@code rate_limit} needs its {@code requests_per_unit} (envoyproxy/ratelimit reads a
 * missing one as 0, which refuses every request), and a mapping may not name a key twice.
 * Keys envoyproxy/ratelimit reads for its metrics and tools ({@code detailed_metric},
 * {@code value_to_metric}, {@code metadata}) are accepted and named once per file in the log with
 * what Tally does with them; {@code share_threshold} makes a wildcard's values share one count,
 * and {@code quota_mode} makes a limit one of the request's quotas, as there. Tally's own
 * {@code charge_hits} charges a limit's hits whether or not they fit (docs/envoy.md, "Costs known
 * at stream end").
 */
final class RulesParser {
  private static final YAMLFactory YAML = YAMLFactory.builder().build();
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  /**
   * Keys envoyproxy/ratelimit reads that change nothing Tally decides, with what Tally does with
   * each: accepted wherever they may stand, and named once per file in the log.
   */
  private static final Map<String, String> NOTED_KEYS = Map.of(
      "detailed_metric", "no effect: Tally keeps no per-descriptor metrics",
      "value_to_metric", "no effect: Tally keeps no per-descriptor metrics",
      "metadata", "no effect: Tally's answers carry no dynamic metadata");
  private static final Set<String> ROOT_KEYS = Set.of("domain", "descriptors", "metadata");
  private static final Set<String> DESCRIPTOR_KEYS = Set.of("key", "value", "rate_limit", "descriptors",
      "shadow_mode", "detailed_metric", "value_to_metric", "share_threshold", "quota_mode", "metadata");
  private static final Set<String> RATE_LIMIT_KEYS = Set.of("unit", "requests_per_unit", "unlimited", "name",
      "replaces", "quota_mode", "metadata", "detailed_metric", "charge_hits");

  private final String file;
  /** The keys of {@link #NOTED_KEYS} this file uses, logged once it is read. */
  private final Set<String> noted = new java.util.TreeSet<>();
  /** Whether a wildcard of this file shares its count ({@code share_threshold}). */
  private boolean shares;

  private RulesParser(String file) {
    this.file = file;
  }

  /** A YAML value and the line it starts on; mappings keep the line of each key too. */
  private record Value(Object value, int line) {}

  /** A YAML mapping: its values by key, in order, and the line of each key. */
  private record Mapping(Map<String, Value> values, Map<String, Integer> keyLines) {}

  /**
   * Parses {@code content}, the rules of one domain.
   *
   * @param file how to name the file in errors, e.g. {@code rules/api.yaml}
   * @throws RulesException naming the line and what is wrong
   */
  static RuleSet.Domain parse(String file, byte[] content) throws RulesException {
    return new RulesParser(file).domain(content);
  }

  private RuleSet.Domain domain(byte[] content) throws RulesException {
    Value root;
    try (JsonParser p = YAML.createParser(content)) {
      if (p.nextToken() == null) {
        throw error(1, "the file is empty; a rules file holds 'domain: NAME' and 'descriptors:'"
            + " (see docs/envoy.md)");
      }
      root = read(p);
      if (p.nextToken() != null) {
        throw error(p.currentTokenLocation().getLineNr(), "a second YAML document; a rules file"
            + " holds one domain: put each in a file of its own");
      }
    } catch (JsonProcessingException e) {
      int line = e.getLocation() == null ? 1 : Math.max(1, e.getLocation().getLineNr());
      throw error(line, "not valid YAML: " + firstLine(e.getOriginalMessage()));
    } catch (IOException e) {
      throw new RulesException(file + ": cannot read: " + e.getMessage());
    }
    Mapping m = mapping(root, "the file", "'domain: NAME' and 'descriptors:'");
    checkKeys(m, ROOT_KEYS, "at the top of a rules file");
    note(m);
    Value domain = m.values().get("domain");
    if (domain == null) {
      throw error(root.line(), "no 'domain'; every rules file names its domain, e.g. 'domain:"
          + " envoy'");
    }
    String name = scalar(domain, "domain");
    if (name.isEmpty()) {
      throw error(domain.line(), "'domain' is empty; name it, e.g. 'domain: envoy'");
    }
    Level level = level(m.values().get("descriptors"), "");
    for (String key : noted) {
      LOG.log(System.Logger.Level.INFO, "{0}: ''{1}'': {2}", file, key, NOTED_KEYS.get(key));
    }
    return new RuleSet.Domain(name, level, file, shares);
  }

  private Value read(JsonParser p) throws IOException, RulesException {
    JsonToken t = p.currentToken();
    int line = p.currentTokenLocation().getLineNr();
    return switch (t) {
      case START_OBJECT -> {
        Map<String, Value> values = new LinkedHashMap<>();
        Map<String, Integer> lines = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String key = p.currentName();
          int keyLine = p.currentTokenLocation().getLineNr();
          if (values.containsKey(key)) {
            throw error(keyLine, "'" + key + "' appears twice in one mapping (first on line "
                + lines.get(key) + ")");
          }
          p.nextToken();
          lines.put(key, keyLine);
          values.put(key, read(p));
        }
        yield new Value(new Mapping(values, lines), line);
      }
      case START_ARRAY -> {
        List<Value> items = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          items.add(read(p));
        }
        yield new Value(items, line);
      }
      case VALUE_STRING -> new Value(p.getText(), line);
      case VALUE_NUMBER_INT -> new Value(p.getBigIntegerValue(), line);
      case VALUE_NUMBER_FLOAT -> new Value(p.getDoubleValue(), line);
      case VALUE_TRUE, VALUE_FALSE -> new Value(t == JsonToken.VALUE_TRUE, line);
      case VALUE_NULL -> new Value(null, line);
      default -> throw error(line, "unexpected YAML (" + t + ")");
    };
  }

  /** The level a {@code descriptors:} list makes, empty if there is none. */
  private Level level(Value descriptors, String parent) throws RulesException {
    if (absent(descriptors)) {
      return Level.EMPTY;
    }
    Map<String, Map<String, Node>> exact = new LinkedHashMap<>();
    Map<String, List<Wildcard>> wildcards = new LinkedHashMap<>();
    Map<String, Node> any = new LinkedHashMap<>();
    Map<String, Integer> seen = new LinkedHashMap<>(); // "key\0value" -> line, for duplicates
    for (Value item : list(descriptors, "descriptors")) {
      Mapping d = mapping(item, "a descriptor", "'key:' and optionally 'value:', 'rate_limit:',"
          + " 'descriptors:', 'shadow_mode:'");
      checkKeys(d, DESCRIPTOR_KEYS, "in a descriptor");
      Value keyValue = d.values().get("key");
      if (keyValue == null) {
        throw error(item.line(), "a descriptor without 'key'; every descriptor has one, e.g."
            + " 'key: remote_address'");
      }
      String key = scalar(keyValue, "key");
      if (key.isEmpty()) {
        throw error(keyValue.line(), "'key' is empty; give the descriptor key Envoy sends");
      }
      Value v = d.values().get("value");
      String value = v == null || v.value() == null ? null : scalar(v, "value");
      if (value != null && value.isEmpty()) {
        value = null; // as envoyproxy/ratelimit: an empty value is no value
      }
      String path = (parent.isEmpty() ? "" : parent + ".") + key
          + (value == null ? "" : "=" + value);
      String id = key + '\0' + (value == null ? "" : "=" + value);
      Integer first = seen.putIfAbsent(id, item.line());
      if (first != null) {
        throw error(item.line(), "descriptor " + path + " is defined twice at this level (first"
            + " on line " + first + "); merge the two");
      }
      boolean shadow = bool(d, "shadow_mode");
      boolean shared = bool(d, "share_threshold");
      boolean quota = bool(d, "quota_mode");
      note(d);
      Value rl = d.values().get("rate_limit");
      Rule rule = absent(rl) ? null
          : rule(rl, d.keyLines().get("rate_limit"), shadow, quota, path);
      Node node = new Node(rule, level(d.values().get("descriptors"), path));
      if (value == null) {
        any.put(key, node);
      } else if (value.contains("*")) {
        wildcards.computeIfAbsent(key, k -> new ArrayList<>()).add(new Wildcard(value, shared, node));
        shares |= shared;
      } else {
        exact.computeIfAbsent(key, k -> new LinkedHashMap<>()).put(value, node);
      }
    }
    Map<String, KeyRules> byKey = new LinkedHashMap<>();
    for (String key : seen.keySet().stream().map(id -> id.substring(0, id.indexOf('\0'))).distinct()
        .toList()) {
      byKey.put(key, new KeyRules(Map.copyOf(exact.getOrDefault(key, Map.of())),
          List.copyOf(wildcards.getOrDefault(key, List.of())), any.get(key)));
    }
    return new Level(Map.copyOf(byKey));
  }

  /** {@code line}: where the {@code rate_limit:} key is, which errors and sources name. */
  private Rule rule(Value rl, int line, boolean shadow, boolean descriptorQuota, String path) throws RulesException {
    Mapping m = mapping(rl, "rate_limit", "'unit:' and 'requests_per_unit:'");
    checkKeys(m, RATE_LIMIT_KEYS, "in a rate_limit");
    note(m);
    boolean quota = descriptorQuota || bool(m, "quota_mode");
    boolean unlimited = bool(m, "unlimited");
    Value unitValue = m.values().get("unit");
    Value rpuValue = m.values().get("requests_per_unit");
    String name = m.values().get("name") == null ? null : scalar(m.values().get("name"), "name");
    List<String> replaces = replaces(m.values().get("replaces"), name);
    String source = file + ":" + line;
    boolean charged = bool(m, "charge_hits");
    if (unlimited) {
      if (charged) {
        throw error(line, "an unlimited rate_limit has nothing to charge: remove 'charge_hits'");
      }
      if (unitValue != null || rpuValue != null) {
        throw error(line, "a rate_limit with 'unlimited: true' takes neither 'unit' nor"
            + " 'requests_per_unit'; remove them, or remove 'unlimited'");
      }
      return new Rule(0, null, true, shadow, name, replaces, path, source, quota, false);
    }
    if (unitValue == null) {
      throw error(line, "rate_limit of " + path + " has no 'unit'; give one of second,"
          + " minute, hour, day, week, month, year (or 'unlimited: true')");
    }
    String unitName = scalar(unitValue, "unit");
    Unit unit = Unit.ofYaml(unitName);
    if (unit == null) {
      throw error(unitValue.line(), "unit '" + unitName + "' is not one of second, minute, hour,"
          + " day, week, month, year");
    }
    if (rpuValue == null) {
      throw error(line, "rate_limit of " + path + " has no 'requests_per_unit'; give the"
          + " number of requests allowed per " + unit.yamlName() + " (0 refuses every request)");
    }
    if (!(rpuValue.value() instanceof BigInteger n) || n.signum() < 0
        || n.compareTo(BigInteger.valueOf(NamedLimits.MAX_UINT32)) > 0) {
      throw error(rpuValue.line(), "requests_per_unit must be a whole number from 0 to "
          + NamedLimits.MAX_UINT32 + ", not " + describe(rpuValue));
    }
    if (charged && n.longValue() == 0) {
      throw error(line, "a rate_limit of 0 refuses every request and takes no debt: remove"
          + " 'charge_hits', or give it a limit");
    }
    return new Rule(n.longValue(), unit, false, shadow, name, replaces, path, source, quota, charged);
  }

  private List<String> replaces(Value v, String ownName) throws RulesException {
    if (v == null || v.value() == null) {
      return List.of();
    }
    List<String> names = new ArrayList<>();
    for (Value item : list(v, "replaces")) {
      Mapping m = mapping(item, "a replaces entry", "'name: LIMIT_NAME'");
      checkKeys(m, Set.of("name"), "in a replaces entry");
      Value n = m.values().get("name");
      String name = n == null ? "" : scalar(n, "name");
      if (name.isEmpty()) {
        throw error(item.line(), "a replaces entry needs the 'name' of the rate_limit it"
            + " replaces");
      }
      if (name.equals(ownName)) {
        throw error(item.line(), "a rate_limit cannot replace itself ('" + name + "')");
      }
      names.add(name);
    }
    return names;
  }

  private Mapping mapping(Value v, String what, String expected) throws RulesException {
    if (!(v.value() instanceof Mapping m)) {
      throw error(v.line(), what + " must be a mapping of " + expected + ", not "
          + describe(v));
    }
    return m;
  }

  @SuppressWarnings("unchecked") // read() puts only lists of Value under a List
  private List<Value> list(Value v, String what) throws RulesException {
    if (!(v.value() instanceof List<?> l)) {
      throw error(v.line(), "'" + what + "' must be a list ('- key: ...' items), not "
          + describe(v));
    }
    return (List<Value>) l;
  }

  private String scalar(Value v, String what) throws RulesException {
    Object o = v.value();
    if (o instanceof String s) {
      return s;
    }
    if (o instanceof BigInteger || o instanceof Boolean) {
      return o.toString(); // 'value: 500' is the value "500", as envoyproxy/ratelimit reads it
    }
    throw error(v.line(), "'" + what + "' must be a string, not " + describe(v));
  }

  private boolean bool(Mapping m, String key) throws RulesException {
    Value v = m.values().get(key);
    if (v == null || v.value() == null) {
      return false;
    }
    if (!(v.value() instanceof Boolean b)) {
      throw error(v.line(), "'" + key + "' must be true or false, not " + describe(v));
    }
    return b;
  }

  /**
   * Whether {@code v} is missing or empty: {@code ~}, and a key with nothing after it, which the
   * YAML parser reads as an empty string (as envoyproxy/ratelimit's YAML reads both as absent).
   */
  private static boolean absent(Value v) {
    return v == null || v.value() == null || "".equals(v.value());
  }

  private void note(Mapping m) throws RulesException {
    for (String key : m.keyLines().keySet()) {
      if (NOTED_KEYS.containsKey(key)) {
        if (key.equals("detailed_metric") || key.equals("value_to_metric")) {
          bool(m, key);
        }
        noted.add(key);
      }
    }
  }

  private void checkKeys(Mapping m, Set<String> allowed, String where) throws RulesException {
    for (Map.Entry<String, Integer> k : m.keyLines().entrySet()) {
      if (!allowed.contains(k.getKey())) {
        throw error(k.getValue(), "unknown key '" + k.getKey() + "' " + where + "; expected "
            + String.join(", ", allowed.stream().sorted().toList()));
      }
    }
  }

  private static String describe(Value v) {
    Object o = v.value();
    return o == null ? "nothing" : o instanceof Mapping ? "a mapping" : o instanceof List ? "a list"
        : o instanceof String s ? "'" + s + "' (a string)" : o.toString();
  }

  private RulesException error(int line, String message) {
    return new RulesException(file + ":" + line + ": " + message);
  }

  private static String firstLine(String s) {
    return s == null ? "unreadable" : s.lines().findFirst().orElse("").strip();
  }
}
