package dev.tally.jdbc;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A PostgreSQL store URI, parsed and checked:
 *
 * <pre>
 * postgresql://[user[:password]@]host[:port]/database[?options]   a pool of its own (port 5432)
 * postgresql:?datasource=name[&amp;options]                        a DataSource registered with
 *                                                                  {@link PostgresDataSources}
 * </pre>
 *
 * Options: {@code table} (default {@code tally}; {@code schema.table} is allowed), {@code pool}
 * (connections, default 8), {@code timeout} (how long one call may take, e.g. {@code 2s},
 * {@code 500ms}; default 5s: the statement timeout, the wait for a connection or a batch's leader,
 * and, a little later ({@link #answerTimeout}), the socket's wait for an answer), {@code sweep} (how often expired rows
 * are deleted, default 60s; {@code 0} for never), {@code limiterCommit} ({@code async}, the
 * default: a rate limiter's decision commits without waiting for its WAL flush; {@code server}:
 * as the server's {@code synchronous_commit} says; docs/postgresql.md says what a crash can
 * forget), {@code limiterBatch} ({@code on}, the default: rate limiter calls that wait at the
 * same time are decided together, one statement for up to 64 of them, at most
 * {@value #DEFAULT_BATCHES} such statements at once; a number: at most that many at once;
 * {@code off}: one statement per call). How long operation ids are remembered is
 * {@link dev.tally.Tally.Builder#operationRetention}.
 */
final class PostgresSettings {
  static final Set<String> SCHEMES = Set.of("postgresql", "postgres");
  static final String FORMS = "postgresql://user@localhost:5432/app?table=tally or"
      + " postgresql:?datasource=main&table=tally";
  private static final Pattern TABLE = Pattern.compile("[a-z_][a-z0-9_]{0,40}(\\.[a-z_][a-z0-9_]{0,40})?");
  private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)");
  private static final Pattern SERVER = Pattern.compile(
      "(?:([^:@/]*)(?::([^@/]*))?@)?(\\[[0-9a-fA-F:.]+]|[^:/?\\[\\]]+)(?::(\\d+))?/([^/?]+)");
  private static final Set<String> OPTIONS = Set.of("table", "pool", "timeout", "sweep", "datasource",
      "limiterCommit", "limiterBatch");
  /** Batches in flight by default: enough to keep a server busy while the next batch forms. */
  static final int DEFAULT_BATCHES = 2;

  final String jdbcUrl;       // null with a registered DataSource
  final String user;
  final String password;
  final String dataSourceName; // null with a URL
  final String table;
  final int pool;
  final Duration timeout;
  final Duration sweep;
  /** Whether a rate limiter's decision commits without waiting for the WAL flush. */
  final boolean limiterCommitAsync;
  /** How many batches of limiter calls may run at once; 0: every call goes alone. */
  final int limiterBatches;
  final String describe;

  private PostgresSettings(String jdbcUrl, String user, String password, String dataSourceName,
      Map<String, String> options, String uri) {
    this.jdbcUrl = jdbcUrl;
    this.user = user;
    this.password = password;
    this.dataSourceName = dataSourceName;
    this.table = table(options.getOrDefault("table", "tally"));
    this.pool = pool(options.getOrDefault("pool", "8"));
    this.timeout = duration("timeout", options.getOrDefault("timeout", "5s"), uri);
    this.sweep = duration("sweep", options.getOrDefault("sweep", "60s"), uri);
    this.limiterCommitAsync = limiterCommit(options.getOrDefault("limiterCommit", "async"));
    this.limiterBatches = limiterBatch(options.getOrDefault("limiterBatch", "on"));
    if (timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, e.g. timeout=5s");
    }
    this.describe = (jdbcUrl != null ? jdbcUrl.substring("jdbc:".length()) : "datasource " + dataSourceName)
        + " table " + table;
  }

  static PostgresSettings parse(String uri) {
    int colon = uri.indexOf(':');
    String scheme = colon < 0 ? "" : uri.substring(0, colon);
    if (!SCHEMES.contains(scheme)) {
      throw new IllegalArgumentException("not a PostgreSQL store URI: '" + uri + "'; try " + FORMS);
    }
    String rest = uri.substring(colon + 1);
    int q = rest.indexOf('?');
    Map<String, String> options = options(q < 0 ? "" : rest.substring(q + 1), uri);
    String location = q < 0 ? rest : rest.substring(0, q);
    if (location.isEmpty()) {
      String name = options.get("datasource");
      if (name == null || name.isEmpty()) {
        throw new IllegalArgumentException("'" + uri + "' names neither a server nor a DataSource; try " + FORMS);
      }
      return new PostgresSettings(null, null, null, name, options, uri);
    }
    if (options.containsKey("datasource")) {
      throw new IllegalArgumentException("'" + uri + "' names both a server and a DataSource; use one: " + FORMS);
    }
    if (!location.startsWith("//")) {
      throw new IllegalArgumentException("'" + uri + "' has no //host; try " + FORMS);
    }
    Matcher m = SERVER.matcher(location.substring(2));
    if (!m.matches()) {
      throw new IllegalArgumentException("cannot read host, port and database in '" + uri + "'; try " + FORMS);
    }
    String user = m.group(1) == null || m.group(1).isEmpty() ? null : decode(m.group(1));
    String password = m.group(2) == null ? null : decode(m.group(2));
    String port = m.group(4) == null ? "5432" : m.group(4);
    String url = "jdbc:postgresql://" + m.group(3) + ":" + port + "/" + m.group(5);
    return new PostgresSettings(url, user, password, null, options, uri);
  }

  private static Map<String, String> options(String query, String uri) {
    Map<String, String> options = new LinkedHashMap<>();
    if (query.isEmpty()) {
      return options;
    }
    for (String pair : query.split("&", -1)) {
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      if (!OPTIONS.contains(name)) {
        throw new IllegalArgumentException("unknown option '" + name + "' in '" + uri + "'; the options are "
            + new java.util.TreeSet<>(OPTIONS));
      }
      options.put(name, eq < 0 ? "" : decode(pair.substring(eq + 1)));
    }
    return options;
  }

  static String table(String name) {
    if (!TABLE.matcher(name).matches()) {
      throw new IllegalArgumentException("table name '" + name + "' must be a lower-case SQL identifier"
          + " (letters, digits, _), optionally schema-qualified, e.g. table=tally or table=metrics.tally");
    }
    return name;
  }

  private static boolean limiterCommit(String text) {
    return switch (text) {
      case "async" -> true;
      case "server" -> false;
      default -> throw new IllegalArgumentException("limiterCommit must be async (a decision commits"
          + " without waiting for its WAL flush) or server (the server's synchronous_commit), not '" + text + "'");
    };
  }

  private static int limiterBatch(String text) {
    switch (text) {
      case "on":
        return DEFAULT_BATCHES;
      case "off":
        return 0;
      default:
        try {
          int n = Integer.parseInt(text);
          if (n >= 1 && n <= 1000) {
            return n;
          }
        } catch (NumberFormatException e) {
          // fall through to the message
        }
        throw new IllegalArgumentException("limiterBatch must be on (concurrent limiter calls are decided"
            + " together, at most " + DEFAULT_BATCHES + " statements at once), a number of such statements"
            + " at once from 1 to 1000, or off (one statement per call), not '" + text + "'");
    }
  }

  private static int pool(String text) {
    try {
      int n = Integer.parseInt(text);
      if (n >= 1 && n <= 1000) {
        return n;
      }
    } catch (NumberFormatException e) {
      // fall through to the message
    }
    throw new IllegalArgumentException("pool must be a number of connections from 1 to 1000, not '" + text + "'");
  }

  static Duration duration(String option, String text, String uri) {
    if (text.equals("0")) {
      return Duration.ZERO;
    }
    Matcher m = DURATION.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException(option + "=" + text + " in '" + uri + "' is not a duration;"
          + " write e.g. 500ms, 5s, 10m or 24h");
    }
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      default -> Duration.ofHours(n);
    };
  }

  private static String decode(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  /**
   * How long a call hears nothing from the server before giving up on its connection: the
   * {@code timeout} and a grace ({@link Deadline#grace}), so that the server's statement timeout,
   * which rolls back cleanly, normally fires first.
   */
  Duration answerTimeout() {
    return timeout.plus(Deadline.grace(timeout));
  }

  /** The table's name without its schema, for naming its indexes. */
  String unqualifiedTable() {
    int dot = table.indexOf('.');
    return dot < 0 ? table : table.substring(dot + 1);
  }
}
