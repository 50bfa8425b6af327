package dev.tally.spring.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.spring.Http;
import dev.tally.spring.RateLimitExceededException;
import dev.tally.spring.RateLimitVerdict;
import dev.tally.spring.TallyRateLimits;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ActiveProfiles;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The servlet application on a real port, driven by real HTTP requests: the filter, the
 * annotation, their header fields and bodies, the health indicator and the metrics. Each store
 * runs the whole class (MemServletAppTest, FileServletAppTest, RedisServletAppTest). Every limit
 * refills over a day, so nothing comes back during a test.
 */
@SpringBootTest(classes = ServletApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("servlet")
@DirtiesContext
abstract class AbstractServletAppTest {
  static final ObjectMapper JSON = new ObjectMapper();

  @LocalServerPort
  int port;

  @Autowired
  ServletApp.Reports reports;

  @Autowired
  MeterRegistry registry;

  @Autowired
  TallyRateLimits limits;

  Http http;

  /** The store's scheme, as the health indicator reports it. */
  abstract String scheme();

  @BeforeEach
  void client() {
    http = new Http(port);
  }

  static JsonNode json(HttpResponse<String> r) {
    return JSON.readTree(r.body());
  }

  static String header(HttpResponse<String> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  @Test
  void filterAnswers429AfterTheLimitWithHeaderFieldsAndAProblemBody() {
    List<Integer> statuses = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> ok = http.get("/api/items/a");
      statuses.add(ok.statusCode());
      assertThat(ok.body()).isEqualTo("item a");
      assertThat(header(ok, "RateLimit-Policy")).isEqualTo("\"items\";q=3;w=86400");
      assertThat(header(ok, "RateLimit")).startsWith("\"items\";r=" + (2 - i) + ";t=");
      assertThat(header(ok, "Retry-After")).isNull();
    }
    assertThat(statuses).containsOnly(200);

    HttpResponse<String> denied = http.get("/api/items/a");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(header(denied, "RateLimit-Policy")).isEqualTo("\"items\";q=3;w=86400");
    assertThat(header(denied, "RateLimit")).matches("\"items\";r=0;t=\\d+");
    long retryAfter = Long.parseLong(header(denied, "Retry-After"));
    assertThat(retryAfter).isBetween(1L, 86400L / 3 + 1);
    JsonNode body = json(denied);
    assertThat(body.get("type").asString()).isEqualTo("https://iana.org/assignments/http-problem-types#quota-exceeded");
    assertThat(body.get("title").asString()).isEqualTo("Request cannot be satisfied as assigned quota has been exceeded");
    assertThat(body.get("status").asInt()).isEqualTo(429);
    assertThat(body.get("detail").asString()).contains("'items'").contains("'a'").contains("retry after");
    assertThat(body.get("instance").asString()).isEqualTo("/api/items/a");
    assertThat(body.get("violated-policies").toString()).isEqualTo("[\"items\"]");
    assertThat(body.get("rule").asString()).isEqualTo("items");
    assertThat(body.get("key").asString()).isEqualTo("a");
    assertThat(body.get("name").asString()).isEqualTo("rl:items:items:a");
    assertThat(body.get("allowed").asBoolean()).isFalse();
    assertThat(body.get("permits").asLong()).isEqualTo(1);
    assertThat(body.get("remaining").asLong()).isZero();
    assertThat(body.get("limit").asLong()).isEqualTo(3);
    assertThat(body.get("retryAfterMillis").asLong()).isBetween(1L, retryAfter * 1000);
    assertThat(body.get("resetAfterMillis").asLong()).isPositive();

    // Another key has its own limit.
    assertThat(http.get("/api/items/b").statusCode()).isEqualTo(200);

    // Decisions are counted in the application's registry, and served by the metrics endpoint.
    assertThat(registry.get("tally.ratelimit.decisions").tags("rule", "items", "policy", "items", "outcome", "allowed")
        .counter().count()).isEqualTo(4);
    assertThat(registry.get("tally.ratelimit.decisions").tags("rule", "items", "outcome", "denied")
        .counter().count()).isEqualTo(1);
    HttpResponse<String> metric = http.get("/actuator/metrics/tally.ratelimit.decisions?tag=rule:items&tag=outcome:denied");
    assertThat(metric.statusCode()).isEqualTo(200);
    assertThat(json(metric).get("measurements").get(0).get("value").asDouble()).isEqualTo(1.0);
  }

  @Test
  void everyPolicyHasItsOwnItemAndADenialGivesBackWhatTheOthersTook() {
    assertThat(http.get("/api/multi/u1").statusCode()).isEqualTo(200);
    HttpResponse<String> second = http.get("/api/multi/u1");
    assertThat(second.statusCode()).isEqualTo(200);
    assertThat(header(second, "RateLimit-Policy")).isEqualTo("\"daily\";q=5;w=86400, \"burst\";q=2;w=86400");
    assertThat(header(second, "RateLimit")).matches("\"daily\";r=3;t=\\d+, \"burst\";r=0;t=\\d+");

    HttpResponse<String> denied = http.get("/api/multi/u1");
    assertThat(denied.statusCode()).isEqualTo(429);
    // daily gave back the unit it took for the denied request
    assertThat(header(denied, "RateLimit")).matches("\"daily\";r=3;t=\\d+, \"burst\";r=0;t=\\d+");
    assertThat(json(denied).get("violated-policies").toString()).isEqualTo("[\"burst\"]");
    assertThat(json(denied).get("name").asString()).isEqualTo("rl:multi:burst:/api/multi/u1");
  }

  @Test
  void filterRuleAppliesToItsMethodsOnly() {
    for (int i = 0; i < 4; i++) {
      HttpResponse<String> get = http.get("/api/posts", "X-Api-Key", "k1");
      assertThat(get.statusCode()).isEqualTo(200);
      assertThat(header(get, "RateLimit")).isNull();
    }
    // gcra 1:1/1d allows bursts of two
    assertThat(http.post("/api/posts", "X-Api-Key", "k1").statusCode()).isEqualTo(200);
    assertThat(http.post("/api/posts", "X-Api-Key", "k1").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.post("/api/posts", "X-Api-Key", "k1");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(json(denied).get("rule").asString()).isEqualTo("filter-2");
    assertThat(http.post("/api/posts", "X-Api-Key", "k2").statusCode()).isEqualTo(200);
    // no key: limited together as "anonymous"
    assertThat(http.post("/api/posts").statusCode()).isEqualTo(200);
    assertThat(http.post("/api/posts").statusCode()).isEqualTo(200);
    assertThat(json(http.post("/api/posts")).get("key").asString()).isEqualTo("anonymous");
  }

  @Test
  void annotationWithANamedRuleLimitsByHeader() {
    HttpResponse<String> first = http.get("/hello", "X-User", "alice");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(header(first, "RateLimit")).startsWith("\"hello\";r=1;t=");
    assertThat(http.get("/hello", "X-User", "alice").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.get("/hello", "X-User", "alice");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(header(denied, "RateLimit-Policy")).startsWith("\"hello\";q=2;w=");
    assertThat(header(denied, "Retry-After")).isNotNull();
    JsonNode body = json(denied);
    assertThat(body.get("status").asInt()).isEqualTo(429);
    assertThat(body.get("rule").asString()).isEqualTo("hello");
    assertThat(body.get("key").asString()).isEqualTo("alice");
    assertThat(body.get("instance").asString()).isEqualTo("/hello");
    assertThat(http.get("/hello", "X-User", "bob").statusCode()).isEqualTo(200);
  }

  @Test
  void repeatedAnnotationsAllApplyEachWithItsKey() {
    HttpResponse<String> first = http.get("/orders/o1");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(header(first, "RateLimit-Policy")).isEqualTo("\"per-order\";q=2;w=86400, \"burst\";q=3;w=86400");
    assertThat(http.get("/orders/o1").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.get("/orders/o1");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "RateLimit")).matches("\"per-order\";r=0;t=\\d+, \"burst\";r=1;t=\\d+");
    JsonNode body = json(denied);
    assertThat(body.get("violated-policies").toString()).isEqualTo("[\"per-order\"]");
    assertThat(body.get("key").asString()).isEqualTo("o1");

    // A second order has its own per-order limit but shares the client's burst.
    assertThat(http.get("/orders/o2").statusCode()).isEqualTo(200);
    HttpResponse<String> burst = http.get("/orders/o2");
    assertThat(burst.statusCode()).isEqualTo(200);
    assertThat(header(burst, "RateLimit")).matches("\"per-order\";r=0;t=\\d+, \"burst\";r=1;t=\\d+");
  }

  @Test
  void permitsPerCallComeOffTheAllowance() {
    HttpResponse<String> first = http.post("/exports/carol");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(header(first, "RateLimit")).startsWith("\"Api.export\";r=6;t=");
    assertThat(http.post("/exports/carol").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.post("/exports/carol");
    assertThat(denied.statusCode()).isEqualTo(429);
    JsonNode body = json(denied);
    assertThat(body.get("permits").asLong()).isEqualTo(4);
    assertThat(body.get("remaining").asLong()).isEqualTo(2);
    assertThat(body.get("limit").asLong()).isEqualTo(10);
  }

  @Test
  void serviceMethodThrowsWhenCalledDirectlyAndIsAnswered429ThroughAController() {
    assertThat(reports.report("x")).isEqualTo("report for x");
    assertThat(reports.report("x")).isEqualTo("report for x");
    assertThatThrownBy(() -> reports.report("x"))
        .isInstanceOfSatisfying(RateLimitExceededException.class, e -> {
          assertThat(e.verdict().allowed()).isFalse();
          assertThat(e.verdict().denying().key()).isEqualTo("x");
          assertThat(e.verdict().denying().decision().limit()).isEqualTo(2);
        });

    assertThat(http.get("/reports/y").statusCode()).isEqualTo(200);
    assertThat(http.get("/reports/y").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.get("/reports/y");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(json(denied).get("key").asString()).isEqualTo("y");
  }

  @Test
  void healthIndicatorReportsTheStoreUp() {
    HttpResponse<String> health = http.get("/actuator/health");
    assertThat(health.statusCode()).isEqualTo(200);
    JsonNode tally = json(health).get("components").get("tally");
    assertThat(tally.get("status").asString()).isEqualTo("UP");
    assertThat(tally.get("details").get("store").asString()).isEqualTo(scheme());
  }

  @Test
  void aZeroPermitCheckTakesNothingAndIsRefusedWhenNothingIsLeft() {
    assertThat(limits.peek("per-order", "zero").allowed()).isTrue();
    assertThat(limits.check("per-order", "zero", 0).allowed()).isTrue();
    assertThat(limits.check("per-order", "zero").allowed()).isTrue();
    assertThat(limits.check("per-order", "zero").allowed()).isTrue();
    RateLimitVerdict empty = limits.check("per-order", "zero", 0);
    assertThat(empty.allowed()).isFalse();
    assertThat(empty.retryAfterSeconds()).isPresent();
    assertThat(empty.denying().decision().remaining()).isZero();
    assertThat(limits.limiter("per-order", "zero").available()).isZero();
  }
}
