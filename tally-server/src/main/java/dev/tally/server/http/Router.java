package dev.tally.server.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.tally.server.http.Api.LimiterAction;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Maps HTTP requests onto {@link Api} calls. Every request goes through the same steps: admit
 * (or 503 while shutting down), route, check the token, read the body within its bound, parse
 * it strictly, call, answer with JSON. Nothing is written to the store before every check has
 * passed. The routes are documented in {@code docs/openapi.yaml}.
 */
final class Router implements HttpHandler {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");
  private static final byte[] PONG = "{\"pong\":true}".getBytes(StandardCharsets.US_ASCII);
  private static final String JSON = "application/json";
  private static final String PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8";
  private static final int MAX_KEYS_LIMIT = 100_000;
  /** Methods named in metrics as themselves; others are "OTHER", so tags stay bounded. */
  private static final Set<String> KNOWN_METHODS =
      Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");

  private static final Set<String> INCR_FIELDS = Set.of("delta", "default", "mustExist");
  private static final Set<String> VALUE_FIELDS = Set.of("value", "ttl");
  private static final Set<String> TTL_FIELDS = Set.of("ttl");
  private static final Set<String> TRY_FIELDS = Set.of("permits", "limit", "limits");
  private static final Set<String> ACQUIRE_FIELDS = Set.of("permits", "limit", "limits", "maxWait");
  private static final Set<String> TOP_UP_FIELDS = Set.of("units", "limit", "limits");

  private final Api api;
  private final Auth auth;
  private final Gate gate;
  private final int maxBodyBytes;
  private final PrometheusMeterRegistry registry;
  private final Map<String, Timer> requestTimers = new ConcurrentHashMap<>();

  Router(Api api, Auth auth, Gate gate, int maxBodyBytes, PrometheusMeterRegistry registry) {
    this.api = api;
    this.auth = auth;
    this.gate = gate;
    this.maxBodyBytes = maxBodyBytes;
    this.registry = registry;
  }

  /** How a request is answered: now, or later (an acquire that waits). */
  private record Match(Reply reply, CompletableFuture<Reply> later) {
    static Match now(Reply reply) {
      return new Match(reply, null);
    }
  }

  /** The route template a request matched, for metrics: set as soon as it is known. */
  private static final class Route {
    String template = "unmatched";
  }

  @Override
  public void handle(HttpExchange ex) {
    long start = System.nanoTime();
    String method = KNOWN_METHODS.contains(ex.getRequestMethod()) ? ex.getRequestMethod() : "OTHER";
    if (!gate.enter()) {
      ex.getResponseHeaders().set("Connection", "close");
      send(ex, method, "shutdown", start,
          Reply.error(Problem.SHUTTING_DOWN, "the server is shutting down; retry elsewhere"));
      return;
    }
    Route route = new Route();
    boolean deferred = false;
    try {
      String path = ex.getRequestURI().getRawPath();
      if (path.equals("/ping")) {
        route.template = "/ping";
        allow(method, "GET");
        sendRaw(ex, method, route.template, start, 200, JSON, PONG);
        return;
      }
      if (path.equals("/healthz")) {
        route.template = "/healthz";
        allow(method, "GET");
        send(ex, method, route.template, start, api.health());
        return;
      }
      if (!auth.allows(ex.getRequestHeaders().getFirst("Authorization"))) {
        ex.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"tally\"");
        send(ex, method, "unauthorized", start, Reply.error(Problem.UNAUTHORIZED,
            "missing or wrong bearer token: send 'Authorization: Bearer <token>'"));
        return;
      }
      if (path.equals("/metrics")) {
        route.template = "/metrics";
        allow(method, "GET");
        sendRaw(ex, method, route.template, start, 200, PROMETHEUS,
            registry.scrape().getBytes(StandardCharsets.UTF_8));
        return;
      }
      Match m = route(ex, method, path, route);
      if (m.later() != null) {
        String r = route.template;
        deferred = true; // the gate is left when the deferred answer has been sent
        m.later().whenComplete((reply, failure) -> {
          try {
            send(ex, method, r, start, failure == null ? reply : Reply.error(failure));
          } finally {
            gate.exit();
          }
        });
        return;
      }
      send(ex, method, route.template, start, m.reply());
    } catch (MethodNotAllowed e) {
      ex.getResponseHeaders().set("Allow", e.allow);
      send(ex, method, route.template, start, Reply.error(Problem.METHOD_NOT_ALLOWED,
          ex.getRequestMethod() + " is not allowed on " + route.template + "; use " + e.allow));
    } catch (RuntimeException e) {
      Reply reply = Reply.error(e);
      if (reply.problem() == Problem.TOO_LARGE) {
        ex.getResponseHeaders().set("Connection", "close"); // the rest of the body is unread
      }
      send(ex, method, route.template, start, reply);
    } finally {
      if (!deferred) {
        gate.exit();
      }
    }
  }

  private static final class MethodNotAllowed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final String allow;

    MethodNotAllowed(String allow) {
      super(null, null, false, false);
      this.allow = allow;
    }
  }

  private Match route(HttpExchange ex, String method, String path, Route route) {
    String[] seg = path.split("/", -1);
    // seg[0] is "" (the path starts with '/')
    if (seg.length < 3 || !seg[1].equals("v1")) {
      return notFound(path);
    }
    switch (seg[2]) {
      case "counters" -> {
        if (seg.length == 3 || (seg.length == 4 && seg[3].isEmpty())) {
          return counterList(ex, method, route);
        }
        String key = Requests.decode(seg[3], "key");
        if (seg.length == 4) {
          return counter(ex, method, key, route);
        }
        if (seg.length == 5) {
          return counterAction(ex, method, key, seg[4], route);
        }
        return notFound(path);
      }
      case "transactions" -> {
        if (seg.length != 3) {
          return notFound(path);
        }
        route.template = "/v1/transactions";
        allow(method, "POST");
        Body b = body(ex, "{\"ops\": [{\"op\": \"incr\", \"key\": \"a\"}]}", Set.of("ops"));
        return Match.now(api.transaction(Requests.ops(b)));
      }
      case "limiters" -> {
        if (seg.length != 5) {
          return notFound(path);
        }
        return limiter(ex, method, Requests.decode(seg[3], "limiter name"), seg[4], route);
      }
      default -> {
        return notFound(path);
      }
    }
  }

  private Match counterList(HttpExchange ex, String method, Route route) {
    route.template = "/v1/counters";
    allow(method, "GET");
    Map<String, String> q = Requests.query(ex.getRequestURI().getRawQuery());
    for (String name : q.keySet()) {
      if (!name.equals("prefix") && !name.equals("limit")) {
        throw new RequestException("unknown query parameter '" + name + "'; expected prefix, limit");
      }
    }
    int limit = 10_000;
    if (q.containsKey("limit")) {
      try {
        limit = Integer.parseInt(q.get("limit"));
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > MAX_KEYS_LIMIT) {
        throw new RequestException("limit must be an integer from 1 to " + MAX_KEYS_LIMIT);
      }
    }
    return Match.now(api.keys(q.getOrDefault("prefix", ""), limit));
  }

  private Match counter(HttpExchange ex, String method, String key, Route route) {
    route.template = "/v1/counters/{key}";
    switch (method) {
      case "GET" -> {
        body(ex, "{}", Set.of());
        return Match.now(api.get(key));
      }
      case "PUT" -> {
        Body b = body(ex, "{\"value\": 5, \"ttl\": \"40d\"}", VALUE_FIELDS);
        return Match.now(api.put(key, value(b), b.duration("ttl")));
      }
      case "DELETE" -> {
        body(ex, "{}", Set.of());
        return Match.now(api.delete(key));
      }
      default -> throw new MethodNotAllowed("GET, PUT, DELETE");
    }
  }

  private Match counterAction(HttpExchange ex, String method, String key, String action,
      Route route) {
    if (Set.of("incr", "decr", "add", "pop", "touch", "ttl").contains(action)) {
      route.template = "/v1/counters/{key}/" + action;
    }
    switch (action) {
      case "incr", "decr" -> {
        allow(method, "POST");
        Body b = body(ex, "{\"delta\": 1, \"default\": 0}", INCR_FIELDS);
        Number delta = b.number("delta", 1L);
        Number dflt = b.number("default", 0L);
        boolean mustExist = b.bool("mustExist", false);
        return Match.now(action.equals("incr")
            ? api.incr(key, delta, dflt, mustExist) : api.decr(key, delta, dflt, mustExist));
      }
      case "add" -> {
        allow(method, "POST");
        Body b = body(ex, "{\"value\": 1000, \"ttl\": \"40d\"}", VALUE_FIELDS);
        return Match.now(api.add(key, value(b), b.duration("ttl")));
      }
      case "pop" -> {
        allow(method, "POST");
        body(ex, "{}", Set.of());
        return Match.now(api.pop(key));
      }
      case "touch" -> {
        allow(method, "POST");
        Body b = body(ex, "{\"ttl\": \"1h\"}", TTL_FIELDS);
        if (b.raw("ttl") == null) {
          throw new RequestException("missing field 'ttl': a duration like \"1h\", or null to"
              + " make the counter permanent");
        }
        return Match.now(api.touch(key, b.duration("ttl")));
      }
      case "ttl" -> {
        allow(method, "GET");
        body(ex, "{}", Set.of());
        return Match.now(api.ttl(key));
      }
      default -> {
        return notFound("/v1/counters/{key}/" + action);
      }
    }
  }

  private Match limiter(HttpExchange ex, String method, String name, String action, Route route) {
    String example = "{\"permits\": 1, \"limit\": {\"tokenBucket\": \"100/1m\"}}";
    LimiterAction simple = switch (action) {
      case "try" -> LimiterAction.TRY;
      case "peek" -> LimiterAction.PEEK;
      case "refund" -> LimiterAction.REFUND;
      case "reset" -> LimiterAction.RESET;
      case "reconfigure" -> LimiterAction.RECONFIGURE;
      case "top-up" -> LimiterAction.TOP_UP;
      case "acquire" -> null;
      default -> throw new RequestException(Problem.NOT_FOUND, "no limiter action '" + action
          + "'; limiter actions are try, acquire, peek, refund, reset, reconfigure, top-up");
    };
    route.template = "/v1/limiters/{name}/" + action;
    allow(method, "POST");
    if (simple == null) {
      Body b = body(ex, example, ACQUIRE_FIELDS);
      return new Match(null, api.acquire(name, Requests.limits(b), b.integer("permits", 1),
          b.duration("maxWait")));
    }
    Set<String> fields = switch (simple) {
      case TRY, REFUND -> TRY_FIELDS;
      case TOP_UP -> TOP_UP_FIELDS;
      default -> Requests.LIMIT_FIELDS;
    };
    Body b = body(ex, example, fields);
    long permits = simple == LimiterAction.TOP_UP ? b.integer("units", 0) : b.integer("permits", 1);
    return Match.now(api.limiter(simple, name, Requests.limits(b), permits));
  }

  private static Number value(Body b) {
    Number v = b.number("value", null);
    if (v == null) {
      throw new RequestException("missing field 'value', e.g. {\"value\": 5}");
    }
    return v;
  }

  private static void allow(String method, String allowed) {
    if (!method.equals(allowed)) {
      throw new MethodNotAllowed(allowed);
    }
  }

  private static Match notFound(String path) {
    throw new RequestException(Problem.NOT_FOUND, "no route " + path + "; see docs/openapi.yaml"
        + " (counters live under /v1/counters/{key}, limiters under /v1/limiters/{name})");
  }

  /** Reads the body within its bound and parses it, allowing only {@code fields}. */
  private Body body(HttpExchange ex, String example, Set<String> fields) {
    String length = ex.getRequestHeaders().getFirst("Content-Length");
    if (length != null) {
      long n;
      try {
        n = Long.parseLong(length.strip());
      } catch (NumberFormatException e) {
        throw new RequestException("Content-Length '" + length + "' is not a number");
      }
      if (n > maxBodyBytes) {
        throw tooLarge(n + " bytes");
      }
    }
    byte[] bytes;
    try (InputStream in = ex.getRequestBody()) {
      bytes = in.readNBytes(maxBodyBytes + 1);
    } catch (IOException e) {
      throw new RequestException("could not read the request body: " + e.getMessage());
    }
    if (bytes.length > maxBodyBytes) {
      throw tooLarge("more than " + maxBodyBytes + " bytes");
    }
    return Body.parse(bytes, example, fields);
  }

  private RequestException tooLarge(String size) {
    return new RequestException(Problem.TOO_LARGE, "request body is " + size + "; the limit is "
        + maxBodyBytes + " bytes (tally serve --max-body)");
  }

  private void send(HttpExchange ex, String method, String route, long start, Reply reply) {
    reply.headers().forEach(ex.getResponseHeaders()::set);
    sendRaw(ex, method, route, start, reply.status(), JSON, reply.bytes());
  }

  private void sendRaw(HttpExchange ex, String method, String route, long start, int status,
      String contentType, byte[] body) {
    try {
      ex.getResponseHeaders().set("Content-Type", contentType);
      ex.sendResponseHeaders(status, body.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    } catch (IOException e) {
      LOG.log(Level.DEBUG, "could not send the response: {0}", e.getMessage());
    } finally {
      ex.close();
      timer(method, route, status).record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
    }
  }

  private Timer timer(String method, String route, int status) {
    String id = method + ' ' + route + ' ' + status;
    Timer t = requestTimers.get(id);
    if (t == null) {
      t = requestTimers.computeIfAbsent(id, k -> Timer.builder("http.server.requests")
          .description("HTTP requests, by route template and status")
          .tags("method", method, "uri", route, "status", Integer.toString(status))
          .register(registry));
    }
    return t;
  }
}
