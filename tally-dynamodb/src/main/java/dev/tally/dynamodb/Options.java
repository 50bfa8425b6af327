package dev.tally.dynamodb;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * A {@code dynamodb:} URI, parsed and checked:
 *
 * <pre>
 * dynamodb://TABLE?region=us-east-1&amp;endpoint=http://localhost:4567&amp;key=key&amp;retries=1
 *                 &amp;accessKey=…&amp;secretKey=…&amp;shards=16&amp;shardPrefix=views:
 *                 &amp;timeout=5000&amp;attemptTimeout=2500
 * </pre>
 *
 * {@code timeout} bounds a whole call (every request, retry, backoff and wait for this process's
 * turn in it: see {@link Deadline}); {@code attemptTimeout} one request attempt that a retry can
 * follow.
 *
 * Values are percent-decoded, but {@code +} stays a plus sign, since AWS secret keys contain it.
 */
record Options(
    String table,
    String region,
    URI endpoint,
    String keyAttribute,
    int retries,
    int limiterRetries,
    int conflictTries,
    Duration timeout,
    Duration attemptTimeout,
    String accessKey,
    String secretKey,
    int shards,
    List<String> shardPrefixes,
    Async async,
    boolean retryLost) {

  /** Whether the store uses {@code DynamoDbAsyncClient} for the asynchronous API. */
  enum Async {
    /** When an async HTTP client (netty-nio-client, aws-crt-client) is on the class path. */
    AUTO,
    /** Never: Tally runs the blocking calls on its executor. */
    OFF
  }

  static final String EXAMPLE =
      "dynamodb://my-table?region=us-east-1 (or, for a local server,"
          + " dynamodb://my-table?endpoint=http://localhost:4567)";

  private static final Pattern TABLE = Pattern.compile("[A-Za-z0-9_.-]{3,255}");
  private static final Set<String> KNOWN = Set.of("region", "endpoint", "key", "retries",
      "limiterRetries", "conflictTries", "timeout", "attemptTimeout", "accessKey", "secretKey", "shards",
      "shardPrefix", "async", "retryLost");
  /** Milliseconds a whole call may take by default. */
  static final int DEFAULT_TIMEOUT_MILLIS = 5_000;
  static final int MAX_SHARDS = 100; // one BatchGetItem reads at most 100 items

  static Options parse(String uri) {
    if (uri == null || !uri.startsWith("dynamodb://")) {
      throw new IllegalArgumentException("a DynamoDB store URI starts with dynamodb://, e.g. " + EXAMPLE);
    }
    String rest = uri.substring("dynamodb://".length());
    int q = rest.indexOf('?');
    String table = decode(q < 0 ? rest : rest.substring(0, q));
    if (table.endsWith("/")) {
      table = table.substring(0, table.length() - 1);
    }
    if (!TABLE.matcher(table).matches()) {
      throw new IllegalArgumentException("'" + table + "' in '" + uri + "' is not a DynamoDB table"
          + " name (3 to 255 of A-Z a-z 0-9 _ . -); write " + EXAMPLE);
    }
    Map<String, List<String>> params = new LinkedHashMap<>();
    if (q >= 0 && q + 1 < rest.length()) {
      for (String pair : rest.substring(q + 1).split("&", -1)) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String name = decode(eq < 0 ? pair : pair.substring(0, eq));
        String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
        if (!KNOWN.contains(name)) {
          throw new IllegalArgumentException("unknown option '" + name + "' in '" + uri
              + "'; the options are " + new TreeSet<>(KNOWN));
        }
        params.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
      }
    }
    String endpointText = one(params, "endpoint", null);
    URI endpoint = null;
    if (endpointText != null) {
      try {
        endpoint = URI.create(endpointText);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("endpoint '" + endpointText + "' is not a URI; write e.g."
            + " endpoint=http://localhost:4567", e);
      }
      if (endpoint.getScheme() == null || endpoint.getHost() == null
          || !Set.of("http", "https").contains(endpoint.getScheme().toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException("endpoint '" + endpointText + "' must be an http or https"
            + " URL with a host, e.g. http://localhost:4567");
      }
    }
    String key = one(params, "key", Items.DEFAULT_KEY);
    Items.checkKeyAttribute(key);
    int retries = integer(params, "retries", 3, 0, 20);
    int limiterRetries = integer(params, "limiterRetries", Math.min(1, retries), 0, 20);
    int conflictTries = integer(params, "conflictTries", 16, 1, 100);
    Duration timeout = Duration.ofMillis(integer(params, "timeout", DEFAULT_TIMEOUT_MILLIS, 1, 600_000));
    // Half the timeout by default: a request stuck on a dead connection is cut short early
    // enough for one retry on a fresh connection to fit in the same call.
    Duration attemptTimeout = Duration.ofMillis(integer(params, "attemptTimeout",
        (int) Math.max(1, timeout.toMillis() / 2), 1, 600_000));
    if (attemptTimeout.compareTo(timeout) > 0) {
      throw new IllegalArgumentException("attemptTimeout=" + attemptTimeout.toMillis() + " is longer than"
          + " timeout=" + timeout.toMillis() + ", which bounds the whole call; give an attemptTimeout of at most"
          + " the timeout (by default half of it)");
    }
    String accessKey = one(params, "accessKey", null);
    String secretKey = one(params, "secretKey", null);
    if ((accessKey == null) != (secretKey == null)) {
      throw new IllegalArgumentException("give accessKey and secretKey together, or neither to use"
          + " the default AWS credentials chain");
    }
    int shards = integer(params, "shards", 1, 1, MAX_SHARDS);
    List<String> prefixes = new ArrayList<>();
    for (String p : params.getOrDefault("shardPrefix", List.of())) {
      for (String one : p.split(",", -1)) {
        if (!one.isEmpty()) {
          prefixes.add(one);
        }
      }
    }
    if (!prefixes.isEmpty() && shards == 1) {
      throw new IllegalArgumentException("shardPrefix needs shards=N (2 to " + MAX_SHARDS + ")");
    }
    String asyncText = one(params, "async", "auto");
    Async async = switch (asyncText) {
      case "auto" -> Async.AUTO;
      case "off", "false" -> Async.OFF;
      default -> throw new IllegalArgumentException("async must be auto or off, not '" + asyncText + "'");
    };
    String retryLostText = one(params, "retryLost", "false");
    if (!retryLostText.equals("true") && !retryLostText.equals("false")) {
      throw new IllegalArgumentException("retryLost must be true or false, not '" + retryLostText + "'");
    }
    String region = one(params, "region", null);
    return new Options(table, region, endpoint, key, retries, limiterRetries, conflictTries, timeout,
        attemptTimeout, accessKey, secretKey, shards, List.copyOf(prefixes), async,
        Boolean.parseBoolean(retryLostText));
  }

  /** Whether counters under {@code key} are sharded. */
  boolean sharded(String key) {
    if (shards == 1) {
      return false;
    }
    if (shardPrefixes.isEmpty()) {
      return true;
    }
    for (String p : shardPrefixes) {
      if (key.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  /** Whether the endpoint is a server on this machine (then placeholder credentials are fine). */
  boolean localEndpoint() {
    if (endpoint == null) {
      return false;
    }
    String host = endpoint.getHost();
    return host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]") || host.equals("::1");
  }

  private static String one(Map<String, List<String>> params, String name, String dflt) {
    List<String> values = params.get(name);
    if (values == null) {
      return dflt;
    }
    if (values.size() > 1) {
      throw new IllegalArgumentException("option '" + name + "' is given " + values.size() + " times");
    }
    return values.get(0);
  }

  private static int integer(Map<String, List<String>> params, String name, int dflt, int min, int max) {
    String text = one(params, name, null);
    if (text == null) {
      return dflt;
    }
    try {
      int v = Integer.parseInt(text.trim());
      if (v >= min && v <= max) {
        return v;
      }
    } catch (NumberFormatException e) {
      // fall through to the message
    }
    throw new IllegalArgumentException("option " + name + "=" + text + " must be an integer from "
        + min + " to " + max);
  }

  /** Percent-decoding that leaves {@code +} alone. */
  static String decode(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()) {
        int hi = Character.digit(s.charAt(i + 1), 16);
        int lo = Character.digit(s.charAt(i + 2), 16);
        if (hi >= 0 && lo >= 0) {
          out.write(hi * 16 + lo);
          i += 2;
          continue;
        }
      }
      byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
      out.write(b, 0, b.length);
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  /** The URI without secrets, for messages. */
  String describe() {
    return "dynamodb://" + table + (endpoint != null ? " at " + endpoint : "")
        + (region != null ? " in " + region : "");
  }
}
