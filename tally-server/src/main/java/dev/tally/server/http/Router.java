package dev.tally.server.http;

import dev.tally.server.app.Problem;
import dev.tally.server.app.RequestException;
import dev.tally.server.async.Stages;
import dev.tally.server.app.TallyApp;
import dev.tally.server.app.TallyApp.LimiterAction;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Maps HTTP requests onto {@link TallyApp} calls, whatever connection they came on, through one
 * route table: method and path template to a handler, declared once in {@link #routes}. Around
 * the handler every request goes through the same steps, each a method below: admit (or 503
 * while shutting down), resolve, check the query, keep web pages out without a token
 * ({@link BrowserGuard}), check the token, check the method, the media type and the
 * Idempotency-Key, call; then, whatever came of it, CORS, metrics and the access log. Nothing
 * is written to the store before every check has passed. The routes are documented in
 * {@code docs/openapi.yaml}.
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
  private static final Set<String> LIST_PARAMETERS = Set.of("prefix", "after", "limit", Int64.PARAMETER);
  private static final Set<String> PUBLIC = Set.of("/ping", "/healthz");
  private static final String VALUE_HINT = ", e.g. {\"value\": 5}";
  private static final String LIMITER_EXAMPLE =
      "{\"permits\": 1, \"limit\": {\"tokenBucket\": \"100/1m\"}}";
  private static final String JOINT_EXAMPLE = "{\"permits\": 1, \"limiters\": [{\"name\": \"{t7}:user:42\","
      + " \"limit\": {\"tokenBucket\": \"100/1m\"}}, {\"name\": \"{t7}:tenant\", \"limit\": {\"fixedWindow\": \"5000/1m\"}}]}";

  /** One request, its body read whole (within the bound the connection enforces). */
  record Request(String method, String uri, String protocol, HttpHeaders headers, byte[] body,
      String remote) {}

  /** A request on its way to its handler: the path's variable, the app to call, the format. */
  private record Call(Request request, String var, String id, TallyApp app, boolean int64Strings,
      Map<String, String> query) {
    Body body(String example, Set<String> fields) {
      return Body.parse(request.body(), example, fields);
    }

    Body empty() {
      return body("{}", Set.of());
    }
  }

  @FunctionalInterface
  private interface Handler {
    CompletionStage<Answer> handle(Call c);
  }

  /** A path template and the handler of each method it takes. */
  private record Route(String template, Map<String, Handler> methods, String allow) {
    Route(String template, Map<String, Handler> methods) {
      this(template, methods, String.join(", ", methods.keySet()));
    }
  }

  /** Where a path leads: its route, the key, limiter name or domain it names, and a lease's id. */
  private record Resolved(Route route, String var, String id) {
    Resolved(Route route, String var) {
      this(route, var, null);
    }
  }

  private final TallyApp app;
  private final Auth auth;
  private final BrowserGuard guard;
  private final PrometheusMeterRegistry registry;
  private final boolean accessLog;
  private final boolean requireIdempotencyKey;
  private final Meters<Timer> requestTimers = new Meters<>();
  private final Map<String, Counter[]> decisions = new ConcurrentHashMap<>();
  private final Map<String, Route> routes = routes();
  /** The routes under a counter and a limiter, by action: no path is built to find one. */
  private final Map<String, Route> counterActions = actions("/v1/counters/{key}/");
  private final Map<String, Route> limiterActions = actions("/v1/limiters/{name}/");

  Router(TallyApp app, Auth auth, BrowserGuard guard, PrometheusMeterRegistry registry,
      boolean accessLog, boolean requireIdempotencyKey) {
    this.app = app;
    this.auth = auth;
    this.guard = guard;
    this.registry = registry;
    this.accessLog = accessLog;
    this.requireIdempotencyKey = requireIdempotencyKey;
  }

  // ------------------------------------------------------------------ the table

  private Map<String, Route> routes() {
    Map<String, Route> t = new LinkedHashMap<>();
    add(t, "/ping", "GET", c -> done(Answer.of(200, JSON, PONG)));
    add(t, "/healthz", "GET", c -> json(c, c.app().health()));
    add(t, "/metrics", "GET", c -> done(Answer.of(200, PROMETHEUS,
        registry.scrape().getBytes(StandardCharsets.UTF_8))));
    add(t, "/v1/counters", "GET", this::keys);
    route(t, "/v1/transactions", "POST", TransactionOps.EXAMPLE, Set.of("ops"),
        (c, b) -> c.app().transaction(Requests.ops(b)));
    bodiless(t, "/v1/ratelimit", "GET", c -> CompletableFuture.completedFuture(c.app().rules()));
    add(t, "/v1/ratelimit/{domain}", "POST", c -> {
      NamedLimitRequest r = NamedLimitRequest.parse(c.request().body());
      return json(c, c.app().rateLimit(c.var(), r.descriptors(), r.hitsAddend()));
    });
    String counter = "/v1/counters/{key}";
    bodiless(t, counter, "GET", c -> c.app().get(c.var()));
    route(t, counter, "PUT", "{\"value\": 5, \"ttl\": \"40d\"}", Set.of("value", "ttl"),
        (c, b) -> c.app().put(c.var(), b.requiredNumber("value", VALUE_HINT), b.duration("ttl")));
    bodiless(t, counter, "DELETE", c -> c.app().delete(c.var()));
    route(t, counter + "/incr", "POST", INCR_EXAMPLE, INCR_FIELDS, (c, b) -> increment(c, b, false));
    route(t, counter + "/decr", "POST", INCR_EXAMPLE, INCR_FIELDS, (c, b) -> increment(c, b, true));
    route(t, counter + "/add", "POST", "{\"value\": 1000, \"ttl\": \"40d\"}", Set.of("value", "ttl"),
        (c, b) -> c.app().add(c.var(), b.requiredNumber("value", VALUE_HINT), b.duration("ttl")));
    bodiless(t, counter + "/pop", "POST", c -> c.app().pop(c.var()));
    route(t, counter + "/touch", "POST", "{\"ttl\": \"1h\"}", Set.of("ttl"), (c, b) -> {
      if (b.raw("ttl") == null) { // null is given: it makes the counter permanent
        throw new RequestException("missing field 'ttl': a duration like \"1h\", or null to"
            + " make the counter permanent");
      }
      return c.app().touch(c.var(), b.duration("ttl"));
    });
    bodiless(t, counter + "/ttl", "GET", c -> c.app().ttl(c.var()));
    route(t, "/v1/limiters:decide", "POST", JOINT_EXAMPLE, Set.of("permits", "limiters"),
        (c, b) -> c.app().decide(Requests.jointLimiters(b), b.integer("permits", 1)));
    String limiter = "/v1/limiters/{name}";
    Set<String> tryFields = Set.of("permits", "limit", "limits", "version");
    limiter(t, limiter + "/try", LimiterAction.TRY, tryFields, "permits");
    limiter(t, limiter + "/peek", LimiterAction.PEEK, Requests.LIMIT_FIELDS, null);
    limiter(t, limiter + "/refund", LimiterAction.REFUND, tryFields, "permits");
    limiter(t, limiter + "/reset", LimiterAction.RESET, Requests.LIMIT_FIELDS, null);
    limiter(t, limiter + "/reconfigure", LimiterAction.RECONFIGURE, Requests.LIMIT_FIELDS, null);
    limiter(t, limiter + "/top-up", LimiterAction.TOP_UP, Set.of("units", "limit", "limits", "version"),
        "units");
    route(t, limiter + "/acquire", "POST", LIMITER_EXAMPLE,
        Set.of("permits", "limit", "limits", "version", "maxWait"), (c, b) -> Requests.versioned(c.app(), b)
            .acquire(c.var(), Requests.limits(b), b.integer("permits", 1), b.duration("maxWait")));
    reservationRoutes(t, limiter);
    concurrencyRoutes(t);
    return Map.copyOf(t);
  }

  private static final String RESERVE_EXAMPLE =
      "{\"estimate\": 1500, \"ttl\": \"5m\", \"limit\": {\"tokenBucket\": \"90000/1m\"}}";
  private static final String SETTLE_EXAMPLE =
      "{\"actual\": 1234, \"limit\": {\"tokenBucket\": \"90000/1m\"}}";

  private void reservationRoutes(Map<String, Route> t, String limiter) {
    route(t, limiter + "/reserve", "POST", RESERVE_EXAMPLE, Set.of("estimate", "ttl", "limit", "limits", "version"),
        (c, b) -> {
          long estimate = b.requiredInteger("estimate", ": the permits the work may cost, taken now, e.g. "
              + RESERVE_EXAMPLE);
          return Requests.versioned(c.app(), b).reserve(c.var(), Requests.limits(b), estimate, b.duration("ttl"));
        });
    String reservation = limiter + "/reservations/{id}";
    route(t, reservation + "/settle", "POST", SETTLE_EXAMPLE, Set.of("actual", "limit", "limits", "version"),
        (c, b) -> {
          long actual = b.requiredInteger("actual", ": what the work really cost, e.g. " + SETTLE_EXAMPLE);
          return Requests.versioned(c.app(), b).settle(c.var(), Requests.limits(b), c.id(), actual);
        });
    route(t, reservation + "/cancel", "POST", LIMITER_EXAMPLE, Requests.LIMIT_FIELDS,
        (c, b) -> Requests.versioned(c.app(), b).settle(c.var(), Requests.limits(b), c.id(), 0));
  }

  private static final String CONCURRENCY = "/v1/concurrency/";
  private static final Set<String> IN_USE_PARAMETERS = Set.of("maxPermits", Int64.PARAMETER);
  private static final String LEASE_EXAMPLE = "{\"maxPermits\": 10, \"weight\": 1, \"ttl\": \"30s\"}";

  private void concurrencyRoutes(Map<String, Route> t) {
    String limit = CONCURRENCY + "{name}";
    add(t, limit, "GET", c -> {
      c.empty();
      String max = c.query().get("maxPermits");
      if (max == null) {
        throw new RequestException("missing query parameter maxPermits, e.g. ?maxPermits=10");
      }
      try {
        return json(c, c.app().leasesInUse(c.var(), Long.parseLong(max)));
      } catch (NumberFormatException e) {
        throw new RequestException("maxPermits must be an integer, not '" + max + "'");
      }
    });
    route(t, limit + "/acquire", "POST", LEASE_EXAMPLE, Set.of("maxPermits", "weight", "ttl", "maxWait"),
        (c, b) -> c.app().acquireLease(c.var(), maxPermits(b), b.integer("weight", 1), b.duration("ttl"),
            b.duration("maxWait")));
    route(t, limit + "/leases/{id}/renew", "POST", "{\"maxPermits\": 10, \"ttl\": \"30s\"}",
        Set.of("maxPermits", "ttl"), (c, b) -> c.app().renewLease(c.var(), maxPermits(b), c.id(), b.duration("ttl")));
    route(t, limit + "/leases/{id}/release", "POST", "{\"maxPermits\": 10}", Set.of("maxPermits"),
        (c, b) -> c.app().releaseLease(c.var(), maxPermits(b), c.id()));
  }

  private static long maxPermits(Body b) {
    return b.requiredInteger("maxPermits", ": the most permits held at once on the name, e.g. " + LEASE_EXAMPLE);
  }

  private Map<String, Route> actions(String prefix) {
    Map<String, Route> byAction = new HashMap<>();
    routes.forEach((template, route) -> {
      if (template.startsWith(prefix)) {
        byAction.put(template.substring(prefix.length()), route);
      }
    });
    return Map.copyOf(byAction);
  }

  /** A route that takes no body (an empty object at most) and answers {@code call}'s result. */
  private void bodiless(Map<String, Route> table, String template, String method,
      Function<Call, CompletionStage<?>> call) {
    route(table, template, method, "{}", Set.of(), (c, b) -> call.apply(c));
  }

  /** The call of a route, given the request's body. */
  @FunctionalInterface
  private interface BodyCall {
    CompletionStage<?> call(Call c, Body b);
  }

  /** A route whose body holds {@code fields}, as {@code example} shows, and answers the call's result. */
  private void route(Map<String, Route> table, String template, String method, String example,
      Set<String> fields, BodyCall call) {
    add(table, template, method, c -> json(c, call.call(c, c.body(example, fields))));
  }

  private static void add(Map<String, Route> table, String template, String method, Handler h) {
    Route r = table.get(template);
    Map<String, Handler> methods = new LinkedHashMap<>(r == null ? Map.of() : r.methods());
    methods.put(method, h);
    table.put(template, new Route(template, methods));
  }

  /** A limiter action that answers at once; {@code count} names its permits' field, if any. */
  private void limiter(Map<String, Route> table, String template, LimiterAction action,
      Set<String> fields, String count) {
    route(table, template, "POST", LIMITER_EXAMPLE, fields, (c, b) -> {
      long n = count == null ? 1 : b.integer(count, count.equals("units") ? 0 : 1);
      return Requests.versioned(c.app(), b).limiter(action, c.var(), Requests.limits(b), n);
    });
  }

  private static final Set<String> INCR_FIELDS =
      Set.of("delta", "default", "mustExist", "min", "max", "onBound");
  private static final String INCR_EXAMPLE = "{\"delta\": 1, \"default\": 0}";

  /** incr, or with {@code negate} decr: bounded if the body gives bounds. */
  private static CompletionStage<?> increment(Call c, Body b, boolean negate) {
    if (BoundsField.present(b)) {
      return c.app().incrWithin(c.var(), b.integer("delta", 1L), b.integer("default", 0L),
          BoundsField.of(b), negate);
    }
    Number delta = b.number("delta", 1L);
    Number dflt = b.number("default", 0L);
    boolean mustExist = b.bool("mustExist", false);
    return negate ? c.app().decr(c.var(), delta, dflt, mustExist)
        : c.app().incr(c.var(), delta, dflt, mustExist);
  }

  private CompletionStage<Answer> keys(Call c) {
    Map<String, String> q = c.query();
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
    return json(c, c.app().keys(q.getOrDefault("prefix", ""), q.get("after"), limit));
  }

  private static CompletionStage<Answer> done(Answer a) {
    return CompletableFuture.completedFuture(a);
  }

  /** A call's result (or failure) as its JSON answer; a limiter's decision is counted. */
  private CompletionStage<Answer> json(Call c, CompletionStage<?> result) {
    return Stages.handle(result, (value, failure) -> {
      Reply reply = failure != null ? Reply.error(failure) : Reply.of(value);
      countDecision(reply);
      return Answer.of(reply, c.int64Strings());
    });
  }

  // ------------------------------------------------------------------ around the handler

  /**
   * Answers {@code r}, or, if the server's gate did not admit it (shutting down), says 503; the
   * stage always completes normally.
   */
  CompletionStage<Answer> handle(Request r, boolean admitted) {
    long start = System.nanoTime();
    String method = KNOWN_METHODS.contains(r.method()) ? r.method() : "OTHER";
    if (!admitted) {
      Answer a = Answer.of(Reply.error(TallyApp.shuttingDown()), false).header("Connection", "close");
      return done(finish(r, method, "shutdown", start, a));
    }
    String template = "unmatched";
    boolean strings = false;
    CompletionStage<Answer> answer;
    try {
      int q = r.uri().indexOf('?');
      Map<String, String> query = Requests.query(q < 0 ? null : r.uri().substring(q + 1));
      strings = Int64.asStrings(query);
      Resolved to = resolve(q < 0 ? r.uri() : r.uri().substring(0, q));
      template = to.route().template();
      checkQuery(query, template.equals("/v1/counters") ? LIST_PARAMETERS
          : template.equals(CONCURRENCY + "{name}") ? IN_USE_PARAMETERS : INT64, r.method());
      answer = guarded(r, to, strings, query);
    } catch (RuntimeException e) {
      answer = done(Answer.of(Reply.error(e), strings));
    }
    if (answer instanceof CompletableFuture<Answer> f && f.isDone()) { // no stage to chain
      return done(finish(r, method, template, start, Stages.now(f, Router::failed)));
    }
    String t = template;
    return Stages.handle(answer, (a, failure) -> finish(r, method, t, start,
        failure != null ? failed(failure) : a));
  }

  private static Answer failed(Throwable failure) {
    return Answer.of(Reply.error(failure), false);
  }

  /** Browser safety, OPTIONS, the token, the method: then the call. */
  private CompletionStage<Answer> guarded(Request r, Resolved to, boolean strings,
      Map<String, String> query) {
    if (!auth.required()) {
      String refusal = guard.refusal(r.headers().get(HOST), r.headers().get(ORIGIN),
          r.headers().get(SEC_FETCH_SITE));
      if (refusal != null) {
        throw new RequestException(Problem.FORBIDDEN, refusal);
      }
    }
    Route route = to.route();
    if (r.method().equals("OPTIONS")) {
      return done(options(r, route));
    }
    if (!PUBLIC.contains(route.template()) && auth.required()
        && !auth.allows(r.headers().get(AUTHORIZATION))) {
      Reply refused = Reply.error(Problem.UNAUTHORIZED,
          "missing or wrong bearer token: send 'Authorization: Bearer <token>'")
          .header("WWW-Authenticate", "Bearer realm=\"tally\"");
      return done(Answer.of(refused, strings));
    }
    String m = r.method().equals("HEAD") ? "GET" : r.method();
    Handler handler = route.methods().get(m);
    if (handler == null) {
      Reply refused = Reply.error(Problem.METHOD_NOT_ALLOWED, r.method() + " is not allowed on "
          + route.template() + "; use " + route.allow())
          .header("Allow", allowHeader(route.allow()));
      return done(Answer.of(refused, strings));
    }
    TallyApp calls = app;
    if (!m.equals("GET")) {
      checkMediaType(r);
      String key = IdempotencyKey.of(r.headers(), requireIdempotencyKey);
      if (key != null) {
        calls = app.withOperationId(key);
      }
    }
    return handler.handle(new Call(r, to.var(), to.id(), calls, strings, query));
  }

  /** CORS, metrics and the access log, whatever the answer; HEAD loses the body here. */
  private Answer finish(Request r, String method, String template, long start, Answer a) {
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

  private static void checkQuery(Map<String, String> query, Set<String> allowed, String method) {
    if (query.isEmpty()) {
      return;
    }
    for (String name : query.keySet()) {
      if (!allowed.contains(name)) {
        String takes = allowed.size() == 1 ? "this route takes only " + Int64.PARAMETER
            : "expected " + String.join(", ", allowed.stream().sorted().toList());
        // a read has no body to put a field in
        boolean read = method.equals("GET") || method.equals("HEAD");
        throw new RequestException("unknown query parameter '" + name + "'; " + takes
            + (read ? "" : " (operation fields go in the JSON body, e.g. {\"" + name + "\": ...})"));
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

  /** The route of {@code path}: a fixed path, or a template with one variable segment. */
  private Resolved resolve(String path) {
    String p = path.length() > 1 && path.endsWith("/")
        && (path.equals("/v1/counters/") || path.equals("/v1/ratelimit/"))
        ? path.substring(0, path.length() - 1) : path;
    Route fixed = routes.get(p);
    if (fixed != null && p.indexOf('{') < 0) {
      return new Resolved(fixed, null);
    }
    if (p.startsWith("/v1/ratelimit/") && p.indexOf('/', "/v1/ratelimit/".length()) < 0) {
      return new Resolved(routes.get("/v1/ratelimit/{domain}"),
          Requests.decode(p.substring("/v1/ratelimit/".length()), "domain"));
    }
    if (p.startsWith(CONCURRENCY)) {
      return concurrency(p);
    }
    boolean counters = p.startsWith("/v1/counters/");
    if (counters || p.startsWith("/v1/limiters/")) {
      String kind = counters ? "counters" : "limiters";
      int from = "/v1/counters/".length(); // as long as "/v1/limiters/"
      int slash = p.indexOf('/', from);
      String raw = slash < 0 ? p.substring(from) : p.substring(from, slash);
      if (raw.isEmpty()) {
        throw new RequestException("empty " + (counters ? "key" : "limiter name") + " in " + p
            + "; name it, e.g. /v1/" + kind + "/views/...");
      }
      String action = slash < 0 ? null : p.substring(slash + 1);
      boolean oneMore = action != null && action.indexOf('/') < 0;
      String base = counters ? "/v1/counters/{key}" : "/v1/limiters/{name}";
      Route route = action == null ? (counters ? routes.get(base) : null)
          : oneMore ? (counters ? counterActions : limiterActions).get(action) : null;
      if (route != null) {
        return new Resolved(route, Requests.decode(raw, counters ? "key" : "limiter name"));
      }
      Resolved byId = counters || action == null ? null : byId(RESERVATIONS, action, raw);
      if (byId != null) {
        return byId;
      }
      if (!counters && oneMore) {
        Requests.decode(raw, "limiter name");
        throw new RequestException(Problem.NO_ROUTE, "no limiter action '" + action
            + "'; limiter actions are " + String.join(", ", routes.keySet().stream()
            .filter(t -> t.startsWith("/v1/limiters/"))
            .map(t -> t.substring("/v1/limiters/{name}/".length())).sorted().toList()));
      }
      if (counters) {
        Requests.decode(raw, "key");
      }
    }
    throw new RequestException(Problem.NO_ROUTE, "no route " + path + "; see docs/openapi.yaml"
        + " (counters live under /v1/counters/{key}, limiters under /v1/limiters/{name})");
  }

  /** A concurrency limit's route: the limit's name, and for a lease's action the lease's id. */
  private Resolved concurrency(String path) {
    String rest = path.substring(CONCURRENCY.length());
    int slash = rest.indexOf('/');
    String raw = slash < 0 ? rest : rest.substring(0, slash);
    if (raw.isEmpty()) {
      throw new RequestException("empty concurrency limit name in " + path + "; name it, e.g."
          + " /v1/concurrency/exports/acquire");
    }
    String name = Requests.decode(raw, "concurrency limit name");
    String action = slash < 0 ? null : rest.substring(slash + 1);
    String limit = CONCURRENCY + "{name}";
    if (action == null || action.equals("acquire")) {
      return new Resolved(routes.get(action == null ? limit : limit + "/acquire"), name);
    }
    Resolved byId = byId(LEASES, action, raw);
    if (byId != null) {
      return byId;
    }
    throw new RequestException(Problem.NO_ROUTE, "no route " + path + "; a concurrency limit's"
        + " routes are GET /v1/concurrency/{name}, POST .../acquire, POST .../leases/{id}/renew"
        + " and POST .../leases/{id}/release");
  }

  /**
   * A name's items that actions address by id.
   *
   * @param segment what comes before the id in an action, e.g. {@code leases/}
   * @param route the routes' template up to the action, e.g. {@code .../leases/{id}/}
   * @param idName what errors call the id
   * @param nameName what errors call the name the items are under
   */
  private record Items(String segment, String route, String idName, String nameName) {}

  private static final Items RESERVATIONS = new Items("reservations/",
      "/v1/limiters/{name}/reservations/{id}/", "reservation id", "limiter name");
  private static final Items LEASES = new Items("leases/", CONCURRENCY + "{name}/leases/{id}/",
      "lease id", "concurrency limit name");

  /**
   * The route of an action on one of a name's {@code items} ({@code leases/{id}/renew},
   * {@code reservations/{id}/settle}), or null if {@code action} is not one.
   */
  private Resolved byId(Items items, String action, String rawName) {
    int end = action.lastIndexOf('/');
    if (!action.startsWith(items.segment()) || end <= items.segment().length()) {
      return null;
    }
    String id = action.substring(items.segment().length(), end);
    Route r = routes.get(items.route() + action.substring(end + 1));
    if (r == null || id.indexOf('/') >= 0) {
      return null;
    }
    return new Resolved(r, Requests.decode(rawName, items.nameName()), Requests.decode(id, items.idName()));
  }

  // ------------------------------------------------------------------ metrics

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
