package dev.tally.redis;

import dev.tally.Durations;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslVerifyMode;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Redis store URI, parsed and checked. The forms:
 *
 * <pre>
 * redis://[user:password@]host[:port][/db][?options]           one server (port 6379)
 * rediss://...                                                 the same over TLS
 * redis-sentinel://[user:password@]host[:port][,host[:port]...][/db]?sentinelMasterId=name[&amp;options]
 * redis-sentinel://...[/db][?options]#name                     (Lettuce's spelling; sentinels on 26379)
 * rediss-sentinel://...                                        TLS to the Sentinels and the servers they name
 * redis-cluster://[user:password@]host[:port][,host[:port]...][?options]   seed nodes of a Cluster
 * rediss-cluster://...                                         the same over TLS
 * </pre>
 *
 * Options: {@code timeout} (per command and per connection attempt, e.g. {@code 2s},
 * {@code 500ms}; default {@value #DEFAULT_TIMEOUT_TEXT}), {@code clientName},
 * {@code denyCache=true|false} (serve repeated rate-limiter denials from a local cache until
 * their retry-after; default false) with {@code denyCacheSize} (most limiters cached, default
 * {@value #DEFAULT_DENY_CACHE_SIZE}), {@code batch=true|false} (concurrent calls on one limiter
 * share a script run; default true), {@code spinWait=true|false} (one waiting blocking caller spins
 * briefly for a fast reply before it parks; default true), {@code replicas} (a write is acknowledged only
 * once that many replicas hold it, Redis' {@code WAIT}; default 0, not on a Cluster), and for TLS {@code verifyPeer=full|ca|none},
 * {@code caCert} (a PEM file of the certificates to trust instead of the JVM's trust store: a
 * private CA) and {@code clientCert} with {@code clientKey} (PEM files: the certificate chain and
 * unencrypted PKCS#8 key this client presents to a server that asks for one, as Redis does by
 * default with {@code tls-auth-clients yes}). A password applies to the Redis servers, not to
 * Sentinels.
 */
final class RedisSettings {
  static final String DEFAULT_TIMEOUT_TEXT = "2s";
  static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
  static final int DEFAULT_DENY_CACHE_SIZE = 10_000;
  static final Set<String> SCHEMES = Set.of(
      "redis", "rediss", "redis-sentinel", "rediss-sentinel", "redis-cluster", "rediss-cluster");

  private static final Pattern TIMEOUT = Pattern.compile("(\\d+)(ms|s|m)");
  private static final Pattern HOST_PORT = Pattern.compile("(\\[[0-9a-fA-F:.]+]|[^:\\[\\]]+)(?::(\\d+))?");
  private static final String FORMS = "redis://[user:password@]host[:port][/db][?timeout=2s],"
      + " rediss://..., redis-sentinel://host:26379[,host:26380][/db]?sentinelMasterId=mymaster,"
      + " redis-cluster://host:7000[,host:7001]";

  enum Topology { STANDALONE, SENTINEL, CLUSTER }

  final Topology topology;
  /** One URI for a server or a Sentinel group (which lists the Sentinels); the seeds of a Cluster. */
  final List<RedisURI> uris;
  final Duration timeout;
  /** Whether limiter denials are cached locally until their retry-after ({@link DenyCache}). */
  final boolean denyCache;
  /** The most limiters the deny cache holds. */
  final int denyCacheSize;
  /** Whether concurrent calls on one limiter share a script run ({@link LimiterBatches}). */
  final boolean batch;
  /** Whether one waiting blocking caller spins briefly before it parks ({@link ReplyWait}). */
  final boolean spinWait;
  /** How many replicas must hold a write before it is acknowledged ({@link ReplicaAcks}); 0: none. */
  final int replicas;
  /** TLS: the certificates to trust, or null for the JVM's trust store. */
  final Path caCert;
  /** TLS: the certificate chain and key presented to the server, or both null. */
  final Path clientCert;
  final Path clientKey;

  private RedisSettings(Topology topology, List<RedisURI> uris, Duration timeout, boolean denyCache,
      int denyCacheSize, boolean batch, boolean spinWait, int replicas, Path caCert, Path clientCert, Path clientKey) {
    this.topology = topology;
    this.uris = List.copyOf(uris);
    this.timeout = timeout;
    this.denyCache = denyCache;
    this.denyCacheSize = denyCacheSize;
    this.batch = batch;
    this.spinWait = spinWait;
    this.replicas = replicas;
    this.caCert = caCert;
    this.clientCert = clientCert;
    this.clientKey = clientKey;
  }

  static RedisSettings parse(String uri) {
    int colon = uri.indexOf(':');
    String scheme = colon < 0 ? "" : uri.substring(0, colon).toLowerCase(Locale.ROOT);
    if (!SCHEMES.contains(scheme) || !uri.startsWith("//", colon + 1)) {
      throw bad(uri, "it does not start with one of " + SCHEMES.stream().sorted().toList() + " and //");
    }
    boolean tls = scheme.startsWith("rediss");
    Topology topology = scheme.endsWith("-sentinel") ? Topology.SENTINEL
        : scheme.endsWith("-cluster") ? Topology.CLUSTER : Topology.STANDALONE;
    String rest = uri.substring(colon + 3);

    String fragment = null;
    int hash = rest.indexOf('#');
    if (hash >= 0) {
      fragment = decode(rest.substring(hash + 1));
      rest = rest.substring(0, hash);
    }
    Map<String, String> options = new LinkedHashMap<>();
    int question = rest.indexOf('?');
    if (question >= 0) {
      for (String pair : rest.substring(question + 1).split("&", -1)) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          throw bad(uri, "option '" + pair + "' is not name=value");
        }
        options.put(pair.substring(0, eq), decode(pair.substring(eq + 1)));
      }
      rest = rest.substring(0, question);
    }
    String path = "";
    int slash = rest.indexOf('/');
    if (slash >= 0) {
      path = rest.substring(slash + 1);
      rest = rest.substring(0, slash);
    }
    String user = null;
    String password = null;
    int at = rest.lastIndexOf('@');
    if (at >= 0) {
      String userInfo = rest.substring(0, at);
      rest = rest.substring(at + 1);
      int c = userInfo.indexOf(':');
      if (c < 0) {
        password = decode(userInfo); // redis://secret@host, as redis-cli and Lettuce read it
      } else {
        user = c == 0 ? null : decode(userInfo.substring(0, c));
        password = decode(userInfo.substring(c + 1));
      }
    }

    Duration timeout = DEFAULT_TIMEOUT;
    String masterId = fragment;
    String clientName = null;
    SslVerifyMode verify = SslVerifyMode.FULL;
    boolean denyCache = false;
    int denyCacheSize = DEFAULT_DENY_CACHE_SIZE;
    boolean batch = true;
    boolean spinWait = true;
    int replicas = 0;
    Path caCert = null;
    Path clientCert = null;
    Path clientKey = null;
    for (Map.Entry<String, String> o : options.entrySet()) {
      String value = o.getValue();
      switch (o.getKey()) {
        case "timeout" -> timeout = timeout(uri, value);
        case "sentinelMasterId" -> masterId = value;
        case "clientName" -> clientName = value;
        case "denyCache" -> denyCache = bool(uri, "denyCache", value);
        case "batch" -> batch = bool(uri, "batch", value);
        case "spinWait" -> spinWait = bool(uri, "spinWait", value);
        case "denyCacheSize" -> {
          try {
            denyCacheSize = Integer.parseInt(value);
          } catch (NumberFormatException e) {
            denyCacheSize = 0;
          }
          if (denyCacheSize <= 0) {
            throw bad(uri, "denyCacheSize must be a positive number of limiters, not '" + value + "'");
          }
        }
        case "replicas" -> {
          try {
            replicas = Integer.parseInt(value);
          } catch (NumberFormatException e) {
            replicas = -1;
          }
          if (replicas < 0 || replicas > 100) {
            throw bad(uri, "replicas must be a number of replicas from 0 to 100, not '" + value + "'");
          }
          if (topology == Topology.CLUSTER && replicas > 0) {
            throw bad(uri, "replicas is not supported on a Cluster yet; use redis:// or redis-sentinel://, or"
                + " Redis' own min-replicas-to-write on the Cluster's primaries");
          }
        }
        case "caCert" -> caCert = tlsFile(uri, tls, "caCert", value);
        case "clientCert" -> clientCert = tlsFile(uri, tls, "clientCert", value);
        case "clientKey" -> clientKey = tlsFile(uri, tls, "clientKey", value);
        case "verifyPeer" -> {
          if (!tls) {
            throw bad(uri, "verifyPeer applies to TLS only (rediss schemes)");
          }
          verify = switch (value.toLowerCase(Locale.ROOT)) {
            case "full", "true" -> SslVerifyMode.FULL;
            case "ca" -> SslVerifyMode.CA;
            case "none", "false" -> SslVerifyMode.NONE;
            default -> throw bad(uri, "verifyPeer must be full, ca or none, not '" + value + "'");
          };
        }
        default -> throw bad(uri, "unknown option '" + o.getKey()
            + "'; known: timeout, clientName, denyCache, denyCacheSize, batch, spinWait, replicas, sentinelMasterId,"
            + " verifyPeer, caCert, clientCert, clientKey");
      }
    }

    if ((clientCert == null) != (clientKey == null)) {
      throw bad(uri, "clientCert and clientKey go together: the certificate chain and the key it certifies");
    }

    int database = 0;
    if (!path.isEmpty()) {
      if (topology == Topology.CLUSTER && !path.equals("0")) {
        throw bad(uri, "Redis Cluster has database 0 only");
      }
      try {
        database = Integer.parseInt(path);
      } catch (NumberFormatException e) {
        throw bad(uri, "the path must be a database number, not '" + path + "'");
      }
      if (database < 0) {
        throw bad(uri, "the database number must not be negative");
      }
    }

    List<String[]> hosts = hosts(uri, rest, topology == Topology.SENTINEL ? 26379 : 6379);
    if (topology == Topology.STANDALONE && hosts.size() != 1) {
      throw bad(uri, "name one server; for several use redis-sentinel:// or redis-cluster://");
    }
    List<RedisURI> uris = new ArrayList<>();
    if (topology == Topology.SENTINEL) {
      if (masterId == null || masterId.isEmpty()) {
        throw bad(uri, "a Sentinel URI names its primary with ?sentinelMasterId=mymaster (or #mymaster)");
      }
      RedisURI.Builder b = RedisURI.Builder.sentinel(hosts.get(0)[0], Integer.parseInt(hosts.get(0)[1]), masterId);
      for (String[] h : hosts.subList(1, hosts.size())) {
        b.withSentinel(h[0], Integer.parseInt(h[1]));
      }
      uris.add(finish(b, tls, verify, database, user, password, clientName, timeout));
    } else {
      for (String[] h : hosts) {
        RedisURI.Builder b = RedisURI.Builder.redis(h[0], Integer.parseInt(h[1]));
        uris.add(finish(b, tls, verify, database, user, password, clientName, timeout));
      }
    }
    return new RedisSettings(topology, uris, timeout, denyCache, denyCacheSize, batch, spinWait, replicas, caCert,
        clientCert, clientKey);
  }

  private static RedisURI finish(RedisURI.Builder b, boolean tls, SslVerifyMode verify, int database,
      String user, String password, String clientName, Duration timeout) {
    b.withSsl(tls).withDatabase(database).withTimeout(timeout);
    if (tls) {
      b.withVerifyPeer(verify);
    }
    if (password != null && user != null) {
      b.withAuthentication(user, password);
    } else if (password != null) {
      b.withPassword(password);
    }
    if (clientName != null) {
      b.withClientName(clientName);
    }
    return b.build();
  }

  private static List<String[]> hosts(String uri, String list, int defaultPort) {
    if (list.isEmpty()) {
      throw bad(uri, "it names no host");
    }
    List<String[]> hosts = new ArrayList<>();
    for (String part : list.split(",", -1)) {
      Matcher m = HOST_PORT.matcher(part);
      if (!m.matches()) {
        throw bad(uri, "'" + part + "' is not host or host:port");
      }
      String host = m.group(1);
      if (host.startsWith("[")) {
        host = host.substring(1, host.length() - 1);
      }
      int port = m.group(2) == null ? defaultPort : Integer.parseInt(m.group(2));
      if (port < 1 || port > 65535) {
        throw bad(uri, "port " + port + " is out of range");
      }
      hosts.add(new String[] {host, Integer.toString(port)});
    }
    return hosts;
  }

  /** A PEM file named by a TLS option: checked now, so that a typo is not a handshake failure later. */
  private static Path tlsFile(String uri, boolean tls, String name, String value) {
    if (!tls) {
      throw bad(uri, name + " applies to TLS only (rediss schemes)");
    }
    Path file = Path.of(value);
    if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
      throw bad(uri, name + " names '" + value + "', which is not a readable file");
    }
    return file;
  }

  private static boolean bool(String uri, String name, String value) {
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw bad(uri, name + " must be true or false, not '" + value + "'");
    };
  }

  private static Duration timeout(String uri, String text) {
    Matcher m = TIMEOUT.matcher(text);
    if (!m.matches()) {
      throw bad(uri, "timeout must be a number with a unit, like 500ms, 2s or 1m; not '" + text + "'");
    }
    long n = Long.parseLong(m.group(1));
    Duration d = switch (m.group(2)) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      default -> Duration.ofMinutes(n);
    };
    if (d.isZero()) {
      throw bad(uri, "timeout must be positive");
    }
    return d;
  }

  private static String decode(String s) {
    return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static IllegalArgumentException bad(String uri, String why) {
    return new IllegalArgumentException("Redis store URI '" + redact(uri) + "': " + why
        + ". Forms: " + FORMS);
  }

  /** The URI without its password, for messages and logs. */
  static String redact(String uri) {
    return uri.replaceFirst("//([^/@:]*):[^/@]*@", "//$1:***@").replaceFirst("//([^/@:]+)@", "//***@");
  }

  @Override
  public String toString() {
    List<RedisURI> nodes = topology == Topology.SENTINEL ? uris.get(0).getSentinels() : uris;
    String where = String.join(",", nodes.stream().map(u -> u.getHost() + ":" + u.getPort()).toList());
    return topology.name().toLowerCase(Locale.ROOT) + " " + where
        + (topology == Topology.SENTINEL ? " primary " + uris.get(0).getSentinelMasterId() : "")
        + ", timeout " + Durations.format(timeout) + (denyCache ? ", deny cache of " + denyCacheSize : "")
        + (replicas > 0 ? ", writes confirmed by " + replicas + (replicas == 1 ? " replica" : " replicas") : "");
  }
}
