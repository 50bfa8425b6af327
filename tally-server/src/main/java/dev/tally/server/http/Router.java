package dev.tally.server.http;

import dev.tally.server.http.Api.LimiterAction;
import dev.tally.server.ratelimit.NamedLimits;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Maps HTTP requests onto {@link Api} calls, whatever connection they came on. Every request goes
 * through the same steps: admit (or 503 while shutting down), route, check the query, keep web
 * pages out (without a token), check the token, check the method and the media type, parse the
 * body strictly, call, answer. Nothing is written to the store before every check has passed.
 * The routes are documented in {@code docs/openapi.yaml}.
 */
final class Router {
  private static final System.Logger ACCESS = System.getLogger("dev.tally.server.access");
  private static final byte[] PONG = "{\"pong\":true}".getBytes(StandardCharsets.US_ASCII);
  static final String JSON = "application/json";
  static final String PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8";
  private static final AsciiString ORIGIN = HttpHeaderNames.ORIGIN;
  private static final AsciiString HOST = HttpHeaderNames.HOST;
  private static final AsciiString AUTHORIZATION = HttpHeaderNames.AUTHORIZATION;
  private static final AsciiString CONTENT_TYPE = HttpHeaderNames.CONTENT_TYPE;
  private static final AsciiString SEC_FETCH_SITE = AsciiString.cached("sec-fetch-site");
  private static final int MAX_KEYS_LIMIT = 100_000;
  /** Past this many policy names, decisions are counted under "other": tags stay bounded. */
  private static final int MAX_POLICY_TAGS = 200;
  /** Methods named in metrics as themselves; others are "OTHER", so tags stay bounded. */
  private static final Set<String> KNOWN_METHODS =
      Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");
  private static final Set<String> INT64 = Set.of(Int64.PARAMETER);
  private static final Set<String> LIST_PARAMETERS = Set.of("prefix", "limit", Int64.PARAMETER);

  private static final Set<String> INCR_FIELDS = Set.of("delta", "default", "mustExist");
  private static final Set<String> VALUE_FIELDS = Set.of("value", "ttl");
  private static final Set<String> TTL_FIELDS = Set.of("ttl");
  private static final Set<String> TRY_FIELDS = Set.of("permits", "limit", "limits");
  private static final Set<String> ACQUIRE_FIELDS = Set.of("permits", "limit", "limits", "maxWait");
  private static final Set<String> TOP_UP_FIELDS = Set.of("units", "limit", "limits");
  private static final Set<String> COUNTER_ACTIONS =
      Set.of("incr", "decr", "add", "pop", "touch", "ttl");
  private static final Set<String> LIMITER_ACTIONS =
      Set.of("try", "acquire", "peek", "refund", "reset", "reconfigure", "top-up");

  private final Api api;
  private final Auth auth;
  private final BrowserGuard guard;
  private final PrometheusMeterRegistry registry;
  private final boolean accessLog;
  private final boolean requireIdempotencyKey;
  private final Meters<Timer> requestTimers = new Meters<>();
  private final Map<String, Counter[]> decisions = new ConcurrentHashMap<>();
  /** The operator's rules ({@code --rules}), or null. */
  private final NamedLimits namedLimits;

  Router(Api api, Auth auth, BrowserGuard guard, PrometheusMeterRegistry registry,
      boolean accessLog, boolean requireIdempotencyKey) {
    this(api, auth, guard, registry, accessLog, requireIdempotencyKey, null);
  }

  Router(Api api, Auth auth, BrowserGuard guard, PrometheusMeterRegistry registry,
      boolean accessLog, boolean requireIdempotencyKey, NamedLimits namedLimits) {
    this.namedLimits = namedLimits;
    this.requireIdempotencyKey = requireIdempotencyKey;
    this.api = api;
    this.auth = auth;
    this.guard = guard;
    this.registry = registry;
    this.accessLog = accessLog;
  }

  /** One request, its body read whole (within the bound the connection enforces). */
  record Request(String method, String uri, String protocol, HttpHeaders headers, byte[] body,
      String remote) {}

  /** A kind of path: its template (for metrics), the methods it takes, what it does. */
  private record Endpoint(String template, String allow, Set<String> methods, String action) {
    Endpoint(String template, String allow, String action) {
      this(template, allow, Set.of(allow.split(", ")), action);
    }
  }

  /** Where a path leads: its endpoint, and the key or limiter name it names. */
  private record Route(Endpoint endpoint, String key) {
    String template() {
      return endpoint.template();
    }

    String allow() {
      return endpoint.allow();
    }

    String action() {
      return endpoint.action();
    }
  }

  private static final Route PING = fixed("/ping", "GET");
  private static final Route HEALTHZ = fixed("/healthz", "GET");
  private static final Route METRICS = fixed("/metrics", "GET");
  private static final Route KEYS = fixed("/v1/counters", "GET");
  private static final Route TRANSACTIONS = fixed("/v1/transactions", "POST");
  private static final Route RULES = fixed("/v1/ratelimit", "GET");
  private static final Endpoint DOMAIN = new Endpoint("/v1/ratelimit/{domain}", "POST", null);
  private static final Endpoint COUNTER = new Endpoint("/v1/counters/{key}", "GET, PUT, DELETE", null);
  private static final Map<String, Endpoint> COUNTER_ENDPOINTS = endpoints("/v1/counters/{key}/",
      COUNTER_ACTIONS);
  private static final Map<String, Endpoint> LIMITER_ENDPOINTS = endpoints("/v1/limiters/{name}/",
      LIMITER_ACTIONS);

  private static Route fixed(String template, String allow) {
    return new Route(new Endpoint(template, allow, null), null);
  }

  private static Map<String, Endpoint> endpoints(String prefix, Set<String> actions) {
    Map<String, Endpoint> m = new HashMap<>();
    for (String a : actions) {
      m.put(a, new Endpoint(prefix + a, a.equals("ttl") ? "GET" : "POST", a));
    }
    return Map.copyOf(m);
  }

  /** A refusal found before any call: its reply, and any header fields that go with it. */
  private static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient Reply reply;

    Refused(Reply reply) {
      super(null, null, false, false);
      this.reply = reply;
    }
  }

  /**
   * Answers {@code r}, or, if the server's gate did not admit it (shutting down), says 503; the
   * stage always completes normally.
   */
  CompletionStage<Answer> handle(Request r, boolean admitted) {
    long start = System.nanoTime();
    String method = KNOWN_METHODS.contains(r.method()) ? r.method() : "OTHER";
    if (!admitted) {
      Answer a = answer(Reply.shuttingDown(), false).header("Connection", "close");
      return CompletableFuture.completedFuture(done(r, method, "shutdown", start, a));
    }
    String template = "unmatched";
    CompletionStage<Answer> answer;
    boolean strings = false;
    try {
      int q = r.uri().indexOf('?');
      String path = q < 0 ? r.uri() : r.uri().substring(0, q);
      String rawQuery = q < 0 ? null : r.uri().substring(q + 1);
      Map<String, String> query = Requests.query(rawQuery);
      strings = Int64.asStrings(query);
      Route route = resolve(path);
      template = route.template();
      checkQuery(query, route.template().equals(KEYS.template()) ? LIST_PARAMETERS : INT64);
      String origin = r.headers().get(ORIGIN);
      if (!auth.required()) {
        String refusal = guard.refusal(r.headers().get(HOST), origin,
            r.headers().get(SEC_FETCH_SITE));
        if (refusal != null) {
          throw new Refused(Reply.error(Problem.FORBIDDEN, refusal));
        }
      }
      if (r.method().equals("OPTIONS")) {
        answer = CompletableFuture.completedFuture(options(r, route));
      } else {
        boolean isPublic = route.template().equals(PING.template())
            || route.template().equals(HEALTHZ.template());
        if (!isPublic && auth.required() && !auth.allows(r.headers().get(AUTHORIZATION))) {
          throw new Refused(Reply.error(Problem.UNAUTHORIZED,
                  "missing or wrong bearer token: send 'Authorization: Bearer <token>'")
              .header("WWW-Authenticate", "Bearer realm=\"tally\""));
        }
        String m = r.method().equals("HEAD") ? "GET" : r.method();
        if (!route.endpoint().methods().contains(m)) {
          throw new Refused(Reply.error(Problem.METHOD_NOT_ALLOWED, r.method()
                  + " is not allowed on " + route.template() + "; use " + route.allow())
              .header("Allow", allowHeader(route.allow())));
        }
        Api calls = api;
        if (!m.equals("GET")) {
          checkMediaType(r);
          String key = IdempotencyKey.of(r.headers(), requireIdempotencyKey);
          if (key != null) {
            calls = api.withOperationId(key);
          }
        }
        boolean s = strings;
        answer = Stages.map(call(r, m, route, calls), x -> x.answer(s));
      }
    } catch (Refused e) {
      answer = CompletableFuture.completedFuture(answer(e.reply, strings));
    } catch (RuntimeException e) {
      answer = CompletableFuture.completedFuture(answer(Reply.error(e), strings));
    }
    String t = template;
    return Stages.handle(answer, (a, failure) -> {
      Answer out = failure != null
          ? answer(Reply.error(Api.unwrap(failure)), false) : a;
      return done(r, method, t, start, out);
    });
  }

  /** What a call produced: a reply, or raw bytes (ping, metrics). */
  private record Result(Reply reply, Answer raw) {
    Answer answer(boolean strings) {
      return raw != null ? raw : Router.answer(reply, strings);
    }
  }

  private static Answer answer(Reply reply, boolean strings) {
    byte[] body = strings ? Json.bytes(Int64.asStrings(reply.body())) : reply.bytes();
    return Answer.of(reply, body);
  }

  private Answer done(Request r, String method, String template, long start, Answer a) {
    String origin = r.headers().get(ORIGIN);
    if (origin != null && guard.corsAllowed(origin)) {
      a.header("Access-Control-Allow-Origin", origin)
          .header("Access-Control-Expose-Headers",
              "RateLimit, RateLimit-Policy, Retry-After, Tally-Limits")
          .header("Vary", "Origin");
    }
    long nanos = System.nanoTime() - start;
    timer(method, template, a.status()).record(nanos, TimeUnit.NANOSECONDS);
    if (accessLog && ACCESS.isLoggable(Level.INFO)) {
      ACCESS.log(Level.INFO, r.remote() + " \"" + r.method() + " " + r.uri() + " "
          + r.protocol() + "\" " + a.status() + " " + a.body().length + " "
          + nanos / 1000 + "us");
    }
    return r.method().equals("HEAD") ? a.withoutBody() : a;
  }

  private static String allowHeader(String allow) {
    return allow.contains("GET") ? allow + ", HEAD, OPTIONS" : allow + ", OPTIONS";
  }

  private Answer options(Request r, Route route) {
    Answer a = Answer.of(204, null, Answer.EMPTY).header("Allow", allowHeader(route.allow()));
    String origin = r.headers().get(ORIGIN);
    if (guard.corsAllowed(origin) && r.headers().contains("Access-Control-Request-Method")) {
      a.header("Access-Control-Allow-Methods", allowHeader(route.allow()))
          .header("Access-Control-Allow-Headers",
              "Authorization, Content-Type, Idempotency-Key")
          .header("Access-Control-Max-Age", "600");
    }
    return a;
  }

  private static void checkQuery(Map<String, String> query, Set<String> allowed) {
    if (query.isEmpty()) {
      return;
    }
    for (String name : query.keySet()) {
      if (!allowed.contains(name)) {
        String takes = allowed.size() == 1 ? "this route takes only " + Int64.PARAMETER
            : "expected " + String.join(", ", allowed.stream().sorted().toList());
        throw new RequestException("unknown query parameter '" + name + "'; " + takes
            + " (operation fields go in the JSON body, e.g. {\"" + name + "\": ...})");
      }
    }
  }

  /**
   * A request that changes something and carries a body must say it is JSON: a web page can
   * send {@code text/plain} or a form without asking first, but not {@code application/json}.
   */
  private static void checkMediaType(Request r) {
    String type = r.headers().get(CONTENT_TYPE);
    if (type == null && r.body().length == 0) {
      return;
    }
    if (type == null || !isJson(type)) {
      throw new RequestException(Problem.UNSUPPORTED_MEDIA_TYPE, "this route takes"
          + " application/json" + (type == null ? "; send 'Content-Type: application/json'"
          : ", not " + type));
    }
  }

  static boolean isJson(String contentType) {
    int semi = contentType.indexOf(';');
    String t = (semi < 0 ? contentType : contentType.substring(0, semi)).strip();
    return t.equalsIgnoreCase(JSON);
  }

  private static Route resolve(String path) {
    switch (path) {
      case "/ping" -> {
        return PING;
      }
      case "/healthz" -> {
        return HEALTHZ;
      }
      case "/metrics" -> {
        return METRICS;
      }
      case "/v1/counters", "/v1/counters/" -> {
        return KEYS;
      }
      case "/v1/transactions" -> {
        return TRANSACTIONS;
      }
      case "/v1/ratelimit", "/v1/ratelimit/" -> {
        return RULES;
      }
      default -> { }
    }
    if (path.startsWith("/v1/ratelimit/") && path.indexOf('/', "/v1/ratelimit/".length()) < 0) {
      return new Route(DOMAIN, Requests.decode(path.substring("/v1/ratelimit/".length()), "domain"));
    }
    boolean counters = path.startsWith("/v1/counters/");
    if (counters || path.startsWith("/v1/limiters/")) {
      String kind = counters ? "counters" : "limiters";
      int from = "/v1/counters/".length(); // as long as "/v1/limiters/"
      int slash = path.indexOf('/', from);
      String raw = slash < 0 ? path.substring(from) : path.substring(from, slash);
      if (raw.isEmpty()) {
        throw new RequestException("empty " + (counters ? "key" : "limiter name") + " in " + path
            + "; name it, e.g. /v1/" + kind + "/views/...");
      }
      String action = slash < 0 ? null : path.substring(slash + 1);
      boolean oneMore = action != null && action.indexOf('/') < 0;
      if (counters) {
        String key = Requests.decode(raw, "key");
        if (action == null) {
          return new Route(COUNTER, key);
        }
        Endpoint e = oneMore ? COUNTER_ENDPOINTS.get(action) : null;
        if (e != null) {
          return new Route(e, key);
        }
      } else if (oneMore) {
        String name = Requests.decode(raw, "limiter name");
        Endpoint e = LIMITER_ENDPOINTS.get(action);
        if (e == null) {
          throw new RequestException(Problem.NOT_FOUND, "no limiter action '" + action
              + "'; limiter actions are " + String.join(", ", LIMITER_ACTIONS.stream().sorted()
              .toList()));
        }
        return new Route(e, name);
      }
    }
    throw new RequestException(Problem.NOT_FOUND, "no route " + path + "; see docs/openapi.yaml"
        + " (counters live under /v1/counters/{key}, limiters under /v1/limiters/{name})");
  }

  private CompletionStage<Result> call(Request r, String method, Route route, Api api) {
    String key = route.key();
    switch (route.template()) {
      case "/ping" -> {
        return raw(Answer.of(200, JSON, PONG));
      }
      case "/healthz" -> {
        return replied(api.health());
      }
      case "/metrics" -> {
        return raw(Answer.of(200, PROMETHEUS, registry.scrape().getBytes(StandardCharsets.UTF_8)));
      }
      case "/v1/counters" -> {
        Map<String, String> q = Requests.query(queryOf(r.uri()));
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
        return replied(api.keys(q.getOrDefault("prefix", ""), limit));
      }
      case "/v1/transactions" -> {
        Body b = body(r, "{\"ops\": [{\"op\": \"incr\", \"key\": \"a\"}]}", Set.of("ops"));
        return replied(api.transaction(Requests.ops(b)));
      }
      case "/v1/ratelimit" -> {
        body(r, "{}", Set.of());
        return replied(CompletableFuture.completedFuture(NamedLimitCalls.rules(namedLimits)));
      }
      case "/v1/ratelimit/{domain}" -> {
        // the Idempotency-Key again (handle() checked it): each descriptor's decision carries it
        return replied(NamedLimitCalls.check(namedLimits, key, r.body(),
            IdempotencyKey.of(r.headers(), requireIdempotencyKey)));
      }
      case "/v1/counters/{key}" -> {
        switch (method) {
          case "GET" -> {
            body(r, "{}", Set.of());
            return replied(api.get(key));
          }
          case "PUT" -> {
            Body b = body(r, "{\"value\": 5, \"ttl\": \"40d\"}", VALUE_FIELDS);
            return replied(api.put(key, value(b), b.duration("ttl")));
          }
          default -> {
            body(r, "{}", Set.of());
            return replied(api.delete(key));
          }
        }
      }
      default -> { }
    }
    if (route.template().startsWith("/v1/counters/")) {
      return counterAction(r, key, route.action(), api);
    }
    return limiter(r, key, route.action(), api);
  }

  private static String queryOf(String uri) {
    int q = uri.indexOf('?');
    return q < 0 ? null : uri.substring(q + 1);
  }

  private static CompletionStage<Result> raw(Answer a) {
    return CompletableFuture.completedFuture(new Result(null, a));
  }

  private CompletionStage<Result> replied(CompletionStage<Reply> reply) {
    return Stages.map(reply, r -> {
      countDecision(r);
      return new Result(r, null);
    });
  }

  private CompletionStage<Result> counterAction(Request r, String key, String action, Api api) {
    switch (action) {
      case "incr", "decr" -> {
        Body b = body(r, "{\"delta\": 1, \"default\": 0}", INCR_FIELDS);
        Number delta = b.number("delta", 1L);
        Number dflt = b.number("default", 0L);
        boolean mustExist = b.bool("mustExist", false);
        return replied(action.equals("incr")
            ? api.incr(key, delta, dflt, mustExist) : api.decr(key, delta, dflt, mustExist));
      }
      case "add" -> {
        Body b = body(r, "{\"value\": 1000, \"ttl\": \"40d\"}", VALUE_FIELDS);
        return replied(api.add(key, value(b), b.duration("ttl")));
      }
      case "pop" -> {
        body(r, "{}", Set.of());
        return replied(api.pop(key));
      }
      case "touch" -> {
        Body b = body(r, "{\"ttl\": \"1h\"}", TTL_FIELDS);
        if (b.raw("ttl") == null) {
          throw new RequestException("missing field 'ttl': a duration like \"1h\", or null to"
              + " make the counter permanent");
        }
        return replied(api.touch(key, b.duration("ttl")));
      }
      default -> {
        body(r, "{}", Set.of());
        return replied(api.ttl(key));
      }
    }
  }

  private CompletionStage<Result> limiter(Request r, String name, String action, Api api) {
    String example = "{\"permits\": 1, \"limit\": {\"tokenBucket\": \"100/1m\"}}";
    LimiterAction simple = switch (action) {
      case "try" -> LimiterAction.TRY;
      case "peek" -> LimiterAction.PEEK;
      case "refund" -> LimiterAction.REFUND;
      case "reset" -> LimiterAction.RESET;
      case "reconfigure" -> LimiterAction.RECONFIGURE;
      case "top-up" -> LimiterAction.TOP_UP;
      default -> null; // acquire
    };
    if (simple == null) {
      Body b = body(r, example, ACQUIRE_FIELDS);
      return replied(api.acquire(name, Requests.limits(b), b.integer("permits", 1),
          b.duration("maxWait")));
    }
    Set<String> fields = switch (simple) {
      case TRY, REFUND -> TRY_FIELDS;
      case TOP_UP -> TOP_UP_FIELDS;
      default -> Requests.LIMIT_FIELDS;
    };
    Body b = body(r, example, fields);
    long permits = simple == LimiterAction.TOP_UP ? b.integer("units", 0) : b.integer("permits", 1);
    return replied(api.limiter(simple, name, Requests.limits(b), permits));
  }

  private static Number value(Body b) {
    Number v = b.number("value", null);
    if (v == null) {
      throw new RequestException("missing field 'value', e.g. {\"value\": 5}");
    }
    return v;
  }

  /** Parses the body, allowing only {@code fields}. */
  private static Body body(Request r, String example, Set<String> fields) {
    return Body.parse(r.body(), example, fields);
  }

  private void countDecision(Reply r) {
    String policy = r.decidingPolicy();
    if (policy == null) {
      return;
    }
    boolean allowed = r.problem() == null;
    Counter[] byOutcome = decisions.get(policy);
    if (byOutcome == null) {
      // past the bound every new name shares "other", and is not kept: the map stays bounded too
      String name = decisions.size() < MAX_POLICY_TAGS ? policy : "other";
      byOutcome = decisions.computeIfAbsent(name, k -> new Counter[] {
          decisionCounter(k, "allowed"), decisionCounter(k, "denied")});
    }
    byOutcome[allowed ? 0 : 1].increment();
  }

  private Counter decisionCounter(String policy, String outcome) {
    return Counter.builder("tally.decisions")
        .description("Limiter decisions over HTTP, by the policy that decided and outcome")
        .tags("policy", policy, "outcome", outcome)
        .register(registry);
  }

  private Timer timer(String method, String route, int status) {
    Timer t = requestTimers.get(route, method, status);
    if (t == null) {
      t = requestTimers.add(route, method, status, Timer.builder("http.server.requests")
          .description("HTTP requests, by route template and status")
          .tags("method", method, "uri", route, "status", Integer.toString(status))
          .publishPercentileHistogram()
          .register(registry));
    }
    return t;
  }
}
