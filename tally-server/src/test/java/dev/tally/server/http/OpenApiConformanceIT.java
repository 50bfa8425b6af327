package dev.tally.server.http;

import static dev.tally.server.http.Responses.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.tck.RedisServerProcess;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/openapi.yaml against the real server: every route driven through each of its success
 * shapes and each error these tests can provoke, on {@code tally serve} processes like the ones
 * users run (the memory store; the file store and a Redis the tests start where a status needs
 * them), and every answer held to the document by {@link OpenApiContract}. Each call also says
 * which status it expects, so a route that silently answers something else fails here too. The
 * last test asks the reverse question: every operation the document describes was answered at
 * least once, so the document cannot describe a route that does not exist.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OpenApiConformanceIT {
  static final OpenApiContract SPEC = OpenApiContract.load(
      Path.of(System.getProperty("tally.openapi", "../docs/openapi.yaml")));
  static final String TOKEN = "0123456789abcdef0123456789abcdef";
  static final String ORIGIN = "https://app.example.com";

  /** No token, CORS for {@link #ORIGIN}. */
  static ServerProcess server;
  /** With a token. */
  static ServerProcess guarded;
  /** The file store, whose reads of a limiter's key are 409 (the memory store answers 404). */
  static ServerProcess files;
  /** With named limits ({@code --rules}). */
  static ServerProcess named;

  @TempDir
  static Path dir;

  @BeforeAll
  static void start() throws IOException {
    server = ServerProcess.start("--store", "mem:", "--cors-origin", ORIGIN);
    guarded = ServerProcess.start(Map.of("TALLY_TOKEN", TOKEN), "--store", "mem:");
    files = ServerProcess.start("--store", "file:" + dir.resolve("store"));
    java.nio.file.Files.writeString(dir.resolve("edge.yaml"), """
        domain: edge
        descriptors:
          - key: tenant
            rate_limit: {name: per_tenant, unit: year, requests_per_unit: 2}
          - key: ldap
            rate_limit: {unlimited: true}
          - key: canary
            shadow_mode: true
            rate_limit: {unit: year, requests_per_unit: 1}
        """);
    // year-long windows: a window ending between two calls would restart a count
    named = ServerProcess.start("--store", "mem:", "--rules", dir.resolve("edge.yaml").toString());
  }

  @AfterAll
  static void stop() {
    for (ServerProcess s : new ServerProcess[] {server, guarded, files, named}) {
      if (s != null) {
        s.close();
      }
    }
  }

  /**
   * Sends one request, holds the exchange to the document, and asserts the status the test
   * provoked; returns the answer.
   */
  static HttpResponse<String> call(ServerProcess s, int status, String method, String target,
      String body, String... headers) {
    HttpResponse<String> r = exchange(s, method, target, body, headers);
    assertThat(r.statusCode()).as(method + " " + target + ": " + r.body()).isEqualTo(status);
    return r;
  }

  /** Sends one request and holds the exchange to the document; returns the answer. */
  static HttpResponse<String> exchange(ServerProcess s, String method, String target,
      String body, String... headers) {
    HttpResponse<String> r = s.send(method, target, body, headers);
    Map<String, String> sent = new LinkedHashMap<>();
    for (int i = 0; i < headers.length; i += 2) {
      sent.put(headers[i], headers[i + 1]);
    }
    if (body != null && sent.keySet().stream().noneMatch("Content-Type"::equalsIgnoreCase)) {
      sent.put("Content-Type", "application/json"); // as ServerProcess.send adds it
    }
    SPEC.check(new OpenApiContract.Exchange(method, target, sent, body, r.statusCode(),
        r.headers(), r.body()));
    return r;
  }

  @Test
  @Order(1)
  void theDocumentCarriesTheProjectVersion() {
    String version = System.getProperty("tally.version");
    assertThat(version).as("the project version, passed by the build as tally.version").isNotBlank();
    assertThat(SPEC.document().at("/info/version").asText()).isEqualTo(version);
  }

  @Test
  @Order(2)
  void counters() {
    call(server, 200, "POST", "/v1/counters/c:views/incr", null);
    call(server, 200, "POST", "/v1/counters/c:views/incr", "{\"delta\":10,\"default\":0}");
    assertThat(json(call(server, 200, "POST", "/v1/counters/c:views/incr?int64=string",
        "{\"delta\":1}")).get("value").textValue()).isEqualTo("12");
    call(server, 200, "POST", "/v1/counters/c:views/decr", "{\"delta\":2,\"default\":10}");
    assertThat(json(call(server, 200, "POST", "/v1/counters/c:float/incr", "{\"delta\":1.5}"))
        .get("value").isFloatingPointNumber()).isTrue();
    assertThat(json(call(server, 200, "POST", "/v1/counters/c:float/incr", "{\"delta\":1}"))
        .get("value").isFloatingPointNumber()).as("an integer delta keeps it floating").isTrue();
    call(server, 409, "POST", "/v1/counters/c:float/incr", "{\"delta\":1,\"mustExist\":true}");
    call(server, 404, "POST", "/v1/counters/c:absent/incr", "{\"delta\":1,\"mustExist\":true}");
    call(server, 404, "POST", "/v1/counters/c:absent/decr", "{\"mustExist\":true}");

    call(server, 200, "PUT", "/v1/counters/c:big", "{\"value\":9223372036854775807,\"ttl\":\"40d\"}");
    call(server, 409, "POST", "/v1/counters/c:big/incr", null);
    call(server, 200, "PUT", "/v1/counters/c:forever", "{\"value\":5}");
    call(server, 200, "GET", "/v1/counters/c:big", null);
    assertThat(json(call(server, 200, "GET", "/v1/counters/c:big?int64=string", null))
        .get("value").textValue()).isEqualTo("9223372036854775807");
    call(server, 200, "GET", "/v1/counters/c:float", null);
    call(server, 404, "GET", "/v1/counters/c:absent", null);
    call(server, 200, "HEAD", "/v1/counters/c:big", null);
    call(server, 404, "HEAD", "/v1/counters/c:absent", null);

    assertThat(json(call(server, 200, "POST", "/v1/counters/c:quota/add",
        "{\"value\":1000,\"ttl\":\"40d\"}")).get("added").asBoolean()).isTrue();
    assertThat(json(call(server, 200, "POST", "/v1/counters/c:quota/add", "{\"value\":1}"))
        .get("added").asBoolean()).isFalse();

    call(server, 200, "GET", "/v1/counters/c:quota/ttl", null);
    call(server, 200, "GET", "/v1/counters/c:forever/ttl?int64=string", null);
    call(server, 404, "GET", "/v1/counters/c:absent/ttl", null);
    call(server, 200, "HEAD", "/v1/counters/c:quota/ttl", null);
    call(server, 404, "HEAD", "/v1/counters/c:absent/ttl", null);
    call(server, 200, "POST", "/v1/counters/c:quota/touch", "{\"ttl\":\"1h\"}");
    assertThat(json(call(server, 200, "POST", "/v1/counters/c:quota/touch", "{\"ttl\":null}"))
        .get("ttlMillis").isNull()).isTrue();
    call(server, 404, "POST", "/v1/counters/c:absent/touch", "{\"ttl\":\"1h\"}");

    JsonNode page = json(call(server, 200, "GET", "/v1/counters?prefix=c:&limit=2", null));
    assertThat(page.get("truncated").asBoolean()).isTrue();
    call(server, 200, "GET", "/v1/counters?prefix=c:&limit=2&after=" + page.get("next").textValue(), null);
    call(server, 200, "GET", "/v1/counters", null);
    call(server, 400, "GET", "/v1/counters?limit=0", null);
    call(server, 200, "HEAD", "/v1/counters?prefix=c:", null);
    call(server, 400, "HEAD", "/v1/counters?limit=x", null);

    call(server, 200, "POST", "/v1/counters/c:views/pop", null);
    call(server, 200, "POST", "/v1/counters/c:float/pop", "{}");
    call(server, 404, "POST", "/v1/counters/c:views/pop", null);
    call(server, 200, "DELETE", "/v1/counters/c:forever", null);
    call(server, 404, "DELETE", "/v1/counters/c:forever", null);
  }

  @Test
  @Order(3)
  void transactions() {
    JsonNode r = json(call(server, 200, "POST", "/v1/transactions", "{\"ops\":["
        + "{\"op\":\"incr\",\"key\":\"t:a\"},{\"op\":\"decr\",\"key\":\"t:b\",\"delta\":2},"
        + "{\"op\":\"incr\",\"key\":\"t:f\",\"delta\":0.5},"
        + "{\"op\":\"put\",\"key\":\"t:c\",\"value\":7,\"ttl\":\"1h\"},"
        + "{\"op\":\"delete\",\"key\":\"t:gone\"},{\"op\":\"get\",\"key\":\"t:none\"}]}"));
    assertThat(r.get("results")).hasSize(6);
    call(server, 200, "POST", "/v1/transactions?int64=string",
        "{\"ops\":[{\"op\":\"get\",\"key\":\"t:c\"},{\"op\":\"delete\",\"key\":\"t:c\"}]}");
    call(server, 404, "POST", "/v1/transactions",
        "{\"ops\":[{\"op\":\"incr\",\"key\":\"t:a\"},{\"op\":\"incr\",\"key\":\"t:absent\",\"mustExist\":true}]}");
    call(server, 200, "PUT", "/v1/counters/t:max", "{\"value\":9223372036854775807}");
    call(server, 409, "POST", "/v1/transactions", "{\"ops\":[{\"op\":\"incr\",\"key\":\"t:max\"}]}");
    call(server, 400, "POST", "/v1/transactions", "{\"ops\":[]}");
    call(server, 400, "POST", "/v1/transactions", "{\"ops\":[{\"op\":\"put\",\"key\":\"t:x\",\"value\":1.5}]}");
  }

  @Test
  @Order(4)
  void limiters() {
    String twoAnHour = "\"limit\":{\"tokenBucket\":\"2/1h\"}";
    call(server, 200, "POST", "/v1/limiters/l:a/try", "{\"permits\":1," + twoAnHour + "}");
    call(server, 200, "POST", "/v1/limiters/l:a/try?int64=string", "{" + twoAnHour + "}");
    HttpResponse<String> denied = call(server, 429, "POST", "/v1/limiters/l:a/try",
        "{" + twoAnHour + "}");
    assertThat(denied.headers().firstValue("Retry-After")).isPresent();
    call(server, 429, "POST", "/v1/limiters/l:a/try?int64=string", "{" + twoAnHour + "}");
    HttpResponse<String> never = call(server, 429, "POST", "/v1/limiters/l:never/try",
        "{\"permits\":5," + twoAnHour + "}");
    assertThat(json(never).get("retryAfterMillis").isNull()).isTrue();
    assertThat(never.headers().firstValue("Retry-After")).isEmpty();
    call(server, 200, "POST", "/v1/limiters/l:two/try", "{\"limits\":["
        + "{\"tokenBucket\":\"100/1m\",\"policy\":\"minute\"},"
        + "{\"fixedWindow\":\"1000/1h\",\"policy\":\"hourly\"}]}");
    for (String other : new String[] {"{\"leakyBucket\":\"100/1m\"}", "{\"gcra\":\"15:30/60s\"}",
        "{\"slidingWindow\":\"1000/1h\"}", "{\"quota\":\"50/day@Europe/Paris\"}"}) {
      call(server, 200, "POST", "/v1/limiters/l:kinds/reset", "{\"limit\":" + other + "}");
    }

    call(server, 200, "POST", "/v1/limiters/l:b/acquire",
        "{\"permits\":1,\"maxWait\":\"1s\",\"limit\":{\"tokenBucket\":\"5/1h\"}}");
    call(server, 429, "POST", "/v1/limiters/l:a/acquire", "{\"maxWait\":\"1s\"," + twoAnHour + "}");
    call(server, 400, "POST", "/v1/limiters/l:a/acquire", "{\"maxWait\":\"10m\"," + twoAnHour + "}");

    call(server, 200, "POST", "/v1/limiters/l:a/peek", "{" + twoAnHour + "}");
    assertThat(json(call(server, 200, "POST", "/v1/limiters/l:a/refund",
        "{\"permits\":1," + twoAnHour + "}")).get("refunded").asLong()).isEqualTo(1);
    call(server, 400, "POST", "/v1/limiters/l:a/refund", "{\"permits\":-1," + twoAnHour + "}");
    call(server, 200, "POST", "/v1/limiters/l:a/reset", "{" + twoAnHour + "}");

    // stored limits decide, and an answer to a request that sent others says so
    call(server, 200, "POST", "/v1/limiters/l:c/try", "{" + twoAnHour + "}");
    call(server, 200, "POST", "/v1/limiters/l:c/reconfigure", "{\"limit\":{\"tokenBucket\":\"10/1h\"}}");
    HttpResponse<String> stale = call(server, 200, "POST", "/v1/limiters/l:c/try", "{" + twoAnHour + "}");
    assertThat(stale.headers().firstValue("Tally-Limits")).hasValue("stored-differ");
    assertThat(json(stale).has("storedLimits")).isTrue();

    // limits with a version: a newer one replaces the stored limits, an older one adopts them,
    // and the 200 and the 429 say which
    call(server, 200, "POST", "/v1/limiters/l:v/try", "{\"version\":1," + twoAnHour + "}");
    assertThat(json(call(server, 200, "POST", "/v1/limiters/l:v/try",
        "{\"version\":2,\"limit\":{\"tokenBucket\":\"3/1h\"}}")).get("limitsMismatch").asText())
        .isEqualTo("upgraded");
    assertThat(json(call(server, 429, "POST", "/v1/limiters/l:v/try",
        "{\"version\":1,\"permits\":3," + twoAnHour + "}")).get("limitsMismatch").asText())
        .isEqualTo("adopted");
    call(server, 400, "POST", "/v1/limiters/l:v/peek", "{\"version\":-1," + twoAnHour + "}");

    String quota = "\"limit\":{\"quota\":\"3/month\"}";
    call(server, 200, "POST", "/v1/limiters/l:q/try", "{\"permits\":3," + quota + "}");
    call(server, 429, "POST", "/v1/limiters/l:q/try", "{" + quota + "}");
    assertThat(json(call(server, 200, "POST", "/v1/limiters/l:q/top-up",
        "{\"units\":2," + quota + "}")).get("toppedUp").asLong()).isEqualTo(2);
    call(server, 200, "POST", "/v1/limiters/l:q/top-up", "{\"units\":1,\"limits\":[{\"quota\":\"3/month\"}]}");
    call(server, 400, "POST", "/v1/limiters/l:q/top-up", "{\"units\":2," + twoAnHour + "}");

    // several limiters in one decision: all or none
    String joint = "{\"permits\":2,\"limiters\":[{\"name\":\"{l}:user\"," + twoAnHour + "},"
        + "{\"name\":\"{l}:global\",\"limits\":[{\"tokenBucket\":\"10/1h\"},{\"fixedWindow\":\"5/1m\"}]}]}";
    call(server, 200, "POST", "/v1/limiters:decide", joint);
    call(server, 429, "POST", "/v1/limiters:decide", joint);
    call(server, 429, "POST", "/v1/limiters:decide?int64=string", joint);
    call(server, 400, "POST", "/v1/limiters:decide", "{\"limiters\":[]}");

    // one key space: a counter's name is not a limiter
    call(server, 200, "POST", "/v1/counters/l:counter/incr", null);
    call(server, 409, "POST", "/v1/limiters/l:counter/try", "{" + twoAnHour + "}");
    call(server, 409, "POST", "/v1/limiters/l:counter/acquire", "{" + twoAnHour + "}");
  }

  @Test
  @Order(4)
  void reservations() {
    String limit = "\"limit\":{\"tokenBucket\":\"100/1h\"}";
    String id = json(call(server, 200, "POST", "/v1/limiters/r:a/reserve",
        "{\"estimate\":40,\"ttl\":\"1m\"," + limit + "}")).get("reservation").asText();
    call(server, 429, "POST", "/v1/limiters/r:a/reserve", "{\"estimate\":80,\"ttl\":\"1m\"," + limit + "}");
    call(server, 400, "POST", "/v1/limiters/r:a/reserve", "{\"estimate\":1," + limit + "}");
    String at = "/v1/limiters/r:a/reservations/" + id;
    call(server, 200, "POST", at + "/settle?int64=string", "{\"actual\":70," + limit + "}");
    call(server, 410, "POST", at + "/settle", "{\"actual\":71," + limit + "}");
    call(server, 410, "POST", at + "/cancel", "{" + limit + "}");
    String other = json(call(server, 200, "POST", "/v1/limiters/r:b/reserve",
        "{\"estimate\":1,\"ttl\":\"1m\"," + limit + "}")).get("reservation").asText();
    call(server, 200, "POST", "/v1/limiters/r:b/reservations/" + other + "/cancel", "{" + limit + "}");
    call(server, 400, "POST", "/v1/limiters/r:b/reservations/" + other + "/settle", "{" + limit + "}");
  }

  @Test
  @Order(4)
  void concurrency() {
    String lease = json(call(server, 200, "POST", "/v1/concurrency/k:a/acquire",
        "{\"maxPermits\":1,\"ttl\":\"1m\"}")).get("id").asText();
    call(server, 200, "POST", "/v1/concurrency/k:b/acquire?int64=string",
        "{\"maxPermits\":2,\"weight\":2,\"ttl\":\"1m\",\"maxWait\":null}");
    call(server, 429, "POST", "/v1/concurrency/k:a/acquire", "{\"maxPermits\":1,\"ttl\":\"1m\",\"maxWait\":\"50ms\"}");
    call(server, 400, "POST", "/v1/concurrency/k:a/acquire", "{\"maxPermits\":1,\"weight\":2,\"ttl\":\"1m\"}");
    call(server, 200, "GET", "/v1/concurrency/k:a?maxPermits=1", null);
    call(server, 200, "HEAD", "/v1/concurrency/k:a?maxPermits=1", null);
    call(server, 400, "GET", "/v1/concurrency/k:a", null);
    call(server, 400, "HEAD", "/v1/concurrency/k:a", null);
    String at = "/v1/concurrency/k:a/leases/" + lease;
    call(server, 200, "POST", at + "/renew", "{\"maxPermits\":1,\"ttl\":\"2m\"}");
    call(server, 400, "POST", at + "/renew", "{\"maxPermits\":1}");
    call(server, 200, "POST", at + "/release", "{\"maxPermits\":1}");
    call(server, 200, "POST", at + "/release", "{\"maxPermits\":1}");
    call(server, 410, "POST", at + "/renew", "{\"maxPermits\":1,\"ttl\":\"2m\"}");
    call(server, 400, "POST", "/v1/concurrency/k:a/leases/x/release", "{\"maxPermits\":1}");
    // one key space: a counter's name is not a concurrency limit
    call(files, 200, "POST", "/v1/counters/k:counter/incr", null);
    call(files, 409, "POST", "/v1/concurrency/k:counter/acquire", "{\"maxPermits\":1,\"ttl\":\"1m\"}");
  }

  @Test
  @Order(5)
  void operations() {
    call(server, 200, "GET", "/ping", null);
    call(server, 200, "HEAD", "/ping", null);
    call(server, 400, "GET", "/ping?verbose=1", null);
    call(server, 200, "GET", "/healthz", null);
    call(server, 200, "GET", "/healthz?int64=string", null);
    call(server, 200, "HEAD", "/healthz", null);
    call(server, 200, "GET", "/metrics", null);
    call(server, 200, "HEAD", "/metrics", null);
  }

  @Test
  @Order(6)
  void optionsOnEveryPath() {
    for (String template : SPEC.paths()) {
      String path = template.replace("{key}", "o").replace("{name}", "o")
          .replace("{domain}", "o").replace("{id}", "1.a");
      HttpResponse<String> r = call(server, 204, "OPTIONS", path, null);
      assertThat(r.headers().firstValue("Allow")).as(path).isPresent();
    }
    HttpResponse<String> preflight = call(server, 204, "OPTIONS", "/v1/counters/o/incr", null,
        "Origin", ORIGIN, "Access-Control-Request-Method", "POST",
        "Access-Control-Request-Headers", "content-type");
    assertThat(preflight.headers().firstValue("Access-Control-Allow-Methods")).isPresent();
    call(server, 403, "OPTIONS", "/v1/counters/o/incr", null,
        "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST");
    call(server, 400, "OPTIONS", "/v1/counters/o?delta=1", null);
  }

  @Test
  @Order(7)
  void refusals() {
    call(server, 400, "POST", "/v1/counters/r:x/incr", "{\"delta\": 1");
    call(server, 400, "POST", "/v1/counters/r:x/incr", "{\"delte\":1}");
    call(server, 400, "POST", "/v1/counters/r:x/incr?delta=5", null);
    call(server, 400, "GET", "/v1/counters/r:x?int64=bigint", null);
    call(server, 400, "GET", "/v1/counters?prefix=a&prefix=b", null);
    call(server, 400, "PUT", "/v1/counters/r:x", "{\"value\":5,\"ttl\":\"4x\"}");
    call(server, 400, "POST", "/v1/counters//incr", null);
    call(server, 400, "POST", "/v1/limiters//try", "{\"limit\":{\"tokenBucket\":\"1/1s\"}}");
    call(server, 400, "POST", "/v1/counters/" + "k".repeat(1025) + "/incr", null);
    call(server, 400, "POST", "/v1/counters/r:x/touch", "{}");
    call(server, 400, "POST", "/v1/limiters/r:l/try", "{\"permits\":1}");
    call(server, 400, "POST", "/v1/limiters/r:l/peek",
        "{\"limit\":{\"tokenBucket\":\"1/1s\",\"gcra\":\"1:1/1s\"}}");
    call(server, 415, "POST", "/v1/counters/r:x/incr", "{\"delta\":5}",
        "Content-Type", "text/plain");
    call(server, 415, "DELETE", "/v1/counters/r:x", "{}", "Content-Type", "application/x-www-form-urlencoded");
    call(server, 413, "PUT", "/v1/counters/r:x", "{\"value\":5,\"pad\":\"" + "x".repeat(70_000) + "\"}");
    call(server, 404, "GET", "/v1/counters/r:x", null); // none of the above wrote anything

    String key = "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"";
    call(server, 200, "POST", "/v1/counters/r:paid/incr", "{\"delta\":5}", "Idempotency-Key", key);
    assertThat(json(call(server, 200, "POST", "/v1/counters/r:paid/incr", "{\"delta\":5}",
        "Idempotency-Key", key)).get("value").asLong()).as("a repeat applies nothing").isEqualTo(5);
    call(server, 422, "POST", "/v1/counters/r:paid/incr", "{\"delta\":6}", "Idempotency-Key", key);
    call(server, 422, "POST", "/v1/limiters/r:paid-l/try", "{\"limit\":{\"tokenBucket\":\"1/1s\"}}",
        "Idempotency-Key", key);
    call(server, 400, "POST", "/v1/counters/r:paid/incr", null, "Idempotency-Key", "\"a\", \"b\"");
    call(server, 400, "DELETE", "/v1/counters/r:paid", null, "Idempotency-Key", "\"\"");

    call(server, 405, "DELETE", "/ping", null);
    call(server, 405, "POST", "/v1/counters/r:x", "{}");
    call(server, 405, "GET", "/v1/limiters/r:l/try", null);
    call(server, 405, "PATCH", "/v1/counters/r:x", "{\"value\":1}");
    call(server, 404, "GET", "/nowhere", null);
    call(server, 404, "POST", "/v1/limiters/r:l/drain", "{}");
    call(server, 404, "GET", "/v1/counters/r:x/value", null);

    call(server, 403, "POST", "/v1/counters/r:csrf/incr", "{\"delta\":1000}",
        "Origin", "http://attacker.example");
    call(server, 403, "GET", "/v1/counters", null, "Sec-Fetch-Site", "cross-site");
    call(server, 403, "GET", "/ping", null, "Origin", "null");
    call(server, 403, "HEAD", "/healthz", null, "Origin", "http://attacker.example");
    call(server, 404, "GET", "/v1/counters/r:csrf", null);
  }

  @Test
  @Order(8)
  void withAToken() {
    String bearer = "Bearer " + TOKEN;
    HttpResponse<String> r = call(guarded, 401, "POST", "/v1/counters/a:x/incr", null);
    assertThat(r.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"tally\"");
    call(guarded, 401, "POST", "/v1/counters/a:x/incr", null, "Authorization", "Bearer wrong-token-0123456789");
    call(guarded, 401, "GET", "/v1/counters/a:x", null);
    call(guarded, 401, "HEAD", "/v1/counters/a:x", null);
    call(guarded, 401, "GET", "/metrics", null);
    call(guarded, 401, "HEAD", "/metrics", null);
    call(guarded, 401, "POST", "/v1/limiters/a:l/try", "{\"limit\":{\"tokenBucket\":\"1/1s\"}}");
    call(guarded, 200, "GET", "/ping", null);
    call(guarded, 200, "GET", "/healthz", null);
    call(guarded, 204, "OPTIONS", "/v1/counters/a:x", null);
    call(guarded, 200, "POST", "/v1/counters/a:x/incr", null, "Authorization", bearer);
    call(guarded, 200, "HEAD", "/v1/counters/a:x", null, "Authorization", bearer);
    call(guarded, 200, "GET", "/metrics", null, "Authorization", bearer);
    // with a token the token decides: a web page's request is 401, not 403
    call(guarded, 401, "POST", "/v1/counters/a:csrf/incr", "{\"delta\":1000}",
        "Origin", "http://attacker.example");
  }

  @Test
  @Order(9)
  void aLimitersNameReadAsACounterIsAConflictOnTheFileStore() {
    call(files, 200, "POST", "/v1/limiters/f:l/try", "{\"limit\":{\"tokenBucket\":\"5/1h\"}}");
    call(files, 409, "GET", "/v1/counters/f:l", null);
    call(files, 409, "HEAD", "/v1/counters/f:l", null);
    call(files, 409, "GET", "/v1/counters/f:l/ttl", null);
    call(files, 409, "HEAD", "/v1/counters/f:l/ttl", null);
    call(files, 409, "PUT", "/v1/counters/f:l", "{\"value\":1}");
    call(files, 409, "DELETE", "/v1/counters/f:l", null);
    call(files, 409, "POST", "/v1/counters/f:l/add", "{\"value\":1}");
    call(files, 409, "POST", "/v1/counters/f:l/pop", null);
    call(files, 409, "POST", "/v1/counters/f:l/touch", "{\"ttl\":\"1h\"}");
    call(files, 409, "POST", "/v1/counters/f:l/decr", null);
    call(files, 409, "POST", "/v1/transactions", "{\"ops\":[{\"op\":\"get\",\"key\":\"f:l\"}]}");
    call(files, 200, "POST", "/v1/counters/f:c/incr", null);
    for (String action : new String[] {"peek", "refund", "reconfigure"}) {
      call(files, 409, "POST", "/v1/limiters/f:c/" + action, "{\"limit\":{\"tokenBucket\":\"5/1h\"}}");
    }
    for (String action : new String[] {"reset", "reconfigure", "refund", "acquire"}) {
      call(files, 200, "POST", "/v1/limiters/f:m/" + action, "{\"limit\":{\"tokenBucket\":\"5/1h\"}}");
    }
  }

  @Test
  @Order(10)
  void aStalledStoreIs504ButHealthz503AndAnUnreachableOne503Or504(@TempDir Path redisDir) throws Exception {
    RedisServerProcess store = RedisServerProcess.start(redisDir);
    try {
      // The timeout bounds each stalled call below; long enough for the first connection of a
      // cold JVM on a busy machine.
      try (ServerProcess s = ServerProcess.start("--store",
          store.uri() + "?timeout=2s")) {
        call(s, 200, "POST", "/v1/counters/o:x/incr", null);
        call(s, 200, "GET", "/healthz", null);

        store.freeze(); // the store takes the commands and never answers them
        try {
          call(s, 504, "POST", "/v1/counters/o:x/incr", null);
          call(s, 504, "POST", "/v1/limiters/o:l/try", "{\"limit\":{\"tokenBucket\":\"5/1h\"}}");
          // a probe asks whether the server can serve: it cannot, 503, as docs/http.md says
          HttpResponse<String> health = call(s, 503, "GET", "/healthz", null);
          assertThat(health.body()).contains("\"health\":\"unavailable\"")
              .as("durations as the server reads them").contains("within 2s").doesNotContain("PT");
          call(s, 503, "HEAD", "/healthz", null);
        } finally {
          store.resume();
        }
        call(s, 200, "POST", "/v1/counters/o:x/incr", null);

        store.kill();
        // gone: refused at once (503), or queued for the reconnection until the timeout (504)
        for (String[] req : new String[][] {{"POST", "/v1/counters/o:x/incr"},
            {"GET", "/healthz"}, {"GET", "/v1/counters"}}) {
          HttpResponse<String> r = exchange(s, req[0], req[1], null);
          assertThat(r.statusCode()).as(req[0] + " " + req[1] + ": " + r.body()).isIn(503, 504);
        }
      }
    } finally {
      store.close();
    }
  }

  static String descriptors(String... kv) {
    StringBuilder b = new StringBuilder("{\"descriptors\":[");
    for (int i = 0; i < kv.length; i += 2) {
      b.append(i == 0 ? "" : ",").append("{\"entries\":[{\"key\":\"").append(kv[i])
          .append("\",\"value\":\"").append(kv[i + 1]).append("\"}]}");
    }
    return b.append("]}").toString();
  }

  @Test
  @Order(11)
  void namedLimits() {
    String check = "/v1/ratelimit/edge";
    JsonNode ok = json(call(named, 200, "POST", check, descriptors("tenant", "a", "ldap", "x",
        "nothing", "y", "canary", "z")));
    assertThat(ok.get("statuses").get(0).get("limitRemaining").asLong()).isEqualTo(1);
    assertThat(json(call(named, 200, "POST", check + "?int64=string", descriptors("tenant", "a")))
        .get("statuses").get(0).get("limitRemaining").textValue()).isEqualTo("0");
    call(named, 429, "POST", check, descriptors("tenant", "a"));
    call(named, 429, "POST", check + "?int64=string", descriptors("tenant", "a", "ldap", "x"));
    // shadow mode: over, and still 200
    assertThat(json(call(named, 200, "POST", check, descriptors("canary", "z")))
        .get("statuses").get(0).get("code").asText()).isEqualTo("OVER_LIMIT");
    call(named, 200, "POST", check, "{\"descriptors\":[{\"entries\":[{\"key\":\"tenant\","
        + "\"value\":\"h\"}]}],\"hitsAddend\":2}");
    call(named, 400, "POST", check, "{\"descriptors\":[]}");
    call(named, 400, "POST", check, "{\"descriptors\":[{\"entries\":[{\"value\":\"x\"}]}]}");
    call(named, 400, "POST", check, descriptors("tenant", "a") + "x");
    call(named, 415, "POST", check, descriptors("tenant", "a"), "Content-Type", "text/plain");
    call(named, 404, "POST", "/v1/ratelimit/elsewhere", descriptors("tenant", "a"));
    call(server, 404, "POST", check, descriptors("tenant", "a"));

    String key = "\"5f1c2c8e-1d1e-4c3a-9a59-1f7e6f0c2d11\"";
    call(named, 200, "POST", check, descriptors("tenant", "idem"), "Idempotency-Key", key);
    assertThat(json(call(named, 200, "POST", check, descriptors("tenant", "idem"),
        "Idempotency-Key", key)).get("statuses").get(0).get("limitRemaining").asLong())
        .as("a repeat takes nothing again").isEqualTo(1);
    call(named, 422, "POST", check, descriptors("tenant", "other"), "Idempotency-Key", key);

    // a limiter of the same name stored with other limits decides, and the answer says so
    call(named, 200, "POST", "/v1/limiters/rls:edge:tenant%3Dstored:2%2Fyear/try",
        "{\"limit\":{\"fixedWindow\":\"7/365d\"}}");
    HttpResponse<String> differ = call(named, 200, "POST", check, descriptors("tenant", "stored"));
    assertThat(differ.headers().firstValue("Tally-Limits")).hasValue("stored-differ");

    call(named, 200, "GET", "/v1/ratelimit", null);
    call(named, 200, "GET", "/v1/ratelimit?int64=string", null);
    call(named, 200, "HEAD", "/v1/ratelimit", null);
    call(server, 404, "GET", "/v1/ratelimit", null);
    call(server, 404, "HEAD", "/v1/ratelimit", null);
    call(named, 400, "GET", "/v1/ratelimit?verbose=1", null);
  }

  @Test
  @Order(Integer.MAX_VALUE)
  void everyOperationOfTheDocumentWasAnswered() {
    Set<String> missing = new TreeSet<>(SPEC.operations());
    missing.removeAll(SPEC.exercised());
    assertThat(missing).as("operations docs/openapi.yaml describes that no test reached"
        + " (run the whole class; a route the server does not have cannot be reached)").isEmpty();
  }
}
