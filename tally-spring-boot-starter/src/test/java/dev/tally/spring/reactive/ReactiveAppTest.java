package dev.tally.spring.reactive;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Tally;
import dev.tally.spring.Http;
import dev.tally.spring.TallyRateLimits;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** The WebFlux application on the file store (a temporary directory), on a real port. */
@SpringBootTest(classes = ReactiveApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("reactive")
@DirtiesContext
class ReactiveAppTest {
  static final ObjectMapper JSON = new ObjectMapper();

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry registry;

  @Autowired
  TallyRateLimits limits;

  @Autowired
  Tally tally;

  Http http;

  @DynamicPropertySource
  static void store(DynamicPropertyRegistry registry) {
    try {
      String dir = Files.createTempDirectory("tally-spring-reactive").resolve("data").toString();
      registry.add("tally.store", () -> "file:" + dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

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
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> ok = http.get("/api/items/a");
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("item a");
      assertThat(header(ok, "RateLimit-Policy")).isEqualTo("\"items\";q=3;w=86400");
      assertThat(header(ok, "RateLimit")).startsWith("\"items\";r=" + (2 - i) + ";t=");
    }
    HttpResponse<String> denied = http.get("/api/items/a");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(header(denied, "RateLimit")).matches("\"items\";r=0;t=\\d+");
    assertThat(Long.parseLong(header(denied, "Retry-After"))).isBetween(1L, 86400L / 3 + 1);
    JsonNode body = json(denied);
    assertThat(body.get("type").asString()).isEqualTo("https://iana.org/assignments/http-problem-types#quota-exceeded");
    assertThat(body.get("status").asInt()).isEqualTo(429);
    assertThat(body.get("instance").asString()).isEqualTo("/api/items/a");
    assertThat(body.get("violated-policies").toString()).isEqualTo("[\"items\"]");
    assertThat(body.get("key").asString()).isEqualTo("a");
    assertThat(body.get("limit").asLong()).isEqualTo(3);
    assertThat(body.get("remaining").asLong()).isZero();
    assertThat(http.get("/api/items/b").statusCode()).isEqualTo(200);

    assertThat(registry.get("tally.ratelimit.decisions").tags("rule", "items", "outcome", "allowed")
        .counter().count()).isEqualTo(4);
    assertThat(registry.get("tally.ratelimit.decisions").tags("rule", "items", "outcome", "denied")
        .counter().count()).isEqualTo(1);
  }

  @Test
  void everyPolicyHasItsOwnItemAndADenialGivesBackWhatTheOthersTook() {
    assertThat(http.get("/api/multi/u1").statusCode()).isEqualTo(200);
    assertThat(http.get("/api/multi/u1").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.get("/api/multi/u1");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "RateLimit-Policy")).isEqualTo("\"daily\";q=5;w=86400, \"burst\";q=2;w=86400");
    assertThat(header(denied, "RateLimit")).matches("\"daily\";r=3;t=\\d+, \"burst\";r=0;t=\\d+");
    assertThat(json(denied).get("violated-policies").toString()).isEqualTo("[\"burst\"]");
  }

  @Test
  void filterRuleAppliesToItsMethodsOnly() {
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> get = http.get("/api/posts", "X-Api-Key", "k1");
      assertThat(get.statusCode()).isEqualTo(200);
      assertThat(header(get, "RateLimit")).isNull();
    }
    assertThat(http.post("/api/posts", "X-Api-Key", "k1").statusCode()).isEqualTo(200);
    assertThat(http.post("/api/posts", "X-Api-Key", "k1").statusCode()).isEqualTo(200);
    assertThat(http.post("/api/posts", "X-Api-Key", "k1").statusCode()).isEqualTo(429);
    assertThat(http.post("/api/posts", "X-Api-Key", "k2").statusCode()).isEqualTo(200);
  }

  @Test
  void annotationOnAWebFluxControllerIsAnswered429() {
    assertThat(http.get("/greet?name=ann").statusCode()).isEqualTo(200);
    assertThat(http.get("/greet?name=ann").statusCode()).isEqualTo(200);
    HttpResponse<String> denied = http.get("/greet?name=ann");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(header(denied, "RateLimit")).matches("\"Api.greet\";r=0;t=\\d+");
    assertThat(header(denied, "Retry-After")).isNotNull();
    assertThat(json(denied).get("key").asString()).isEqualTo("ann");
    assertThat(json(denied).get("instance").asString()).isEqualTo("/greet");
    assertThat(http.get("/greet?name=ben").statusCode()).isEqualTo(200);
  }

  @Test
  void aFilterRuleAndTheAnnotationOnOneRequestBothReachTheFields() {
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> ok = http.get("/api/both/cy");
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).isEqualTo("both cy");
      assertThat(header(ok, "RateLimit-Policy")).isEqualTo("\"both\";q=5;w=86400, \"Api.both\";q=2;w=86400");
      assertThat(header(ok, "RateLimit")).matches("\"both\";r=" + (4 - i) + ";t=\\d+, \"Api.both\";r=" + (1 - i)
          + ";t=\\d+");
    }
    HttpResponse<String> denied = http.get("/api/both/cy");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(header(denied, "RateLimit-Policy")).isEqualTo("\"both\";q=5;w=86400, \"Api.both\";q=2;w=86400");
    assertThat(header(denied, "RateLimit")).matches("\"both\";r=2;t=\\d+, \"Api.both\";r=0;t=\\d+");
    assertThat(header(denied, "Retry-After")).isNotNull();
    assertThat(json(denied).get("violated-policies").toString()).isEqualTo("[\"Api.both\"]");
    // The annotation refused: the filter's unit for that request is given back once it is answered.
    awaitAvailable("both", "cy", 3);
    assertThat(http.get("/api/both/dee").statusCode()).isEqualTo(200);
  }

  @Test
  void onlyFailedLoginsCountAndATrustedCallerIsSkipped() {
    for (int i = 0; i < 5; i++) {
      assertThat(http.post("/login", "X-User", "bob", "X-Password", "right").statusCode()).isEqualTo(200);
      awaitAvailable("login-failures", "bob", 3);
    }
    for (int i = 0; i < 3; i++) {
      assertThat(http.post("/login", "X-User", "bob", "X-Password", "wrong").statusCode()).isEqualTo(401);
    }
    awaitAvailable("login-failures", "bob", 0);
    HttpResponse<String> denied = http.post("/login", "X-User", "bob", "X-Password", "wrong");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(json(denied).get("rule").asString()).isEqualTo("login-failures");
    // skip-predicates: HEADER=X-Trusted,yes
    assertThat(http.post("/login", "X-User", "bob", "X-Password", "wrong", "X-Trusted", "yes").statusCode())
        .isEqualTo(401);
    assertThat(http.post("/login", "X-User", "bob", "X-Password", "wrong", "X-Trusted", "no").statusCode())
        .isEqualTo(429);
  }

  /**
   * A cost above the estimate is taken into debt, which the next request waits out; a call that
   * ends in an error keeps its estimate, and its reservation is closed at once.
   */
  @Test
  void aCostAboveTheEstimateIsTakenIntoDebtAndAFailedCallKeepsItsEstimate() {
    assertThat(http.get("/tokens?used=1", "X-User", "ida").statusCode()).isEqualTo(200);
    awaitAvailable("tokens", "ida", 9);
    assertThat(http.get("/tokens?used=0&fail=true", "X-User", "ida").statusCode()).isEqualTo(500);
    awaitAvailable("tokens", "ida", 7);
    awaitNoReservations();

    // 15 used, 7 left: a debt of 8, then the 2 of a call's estimate, a token every 8640 s.
    assertThat(http.get("/tokens?used=15", "X-User", "ida").statusCode()).isEqualTo(200);
    awaitNoReservations();
    HttpResponse<String> refused = http.get("/tokens?used=1", "X-User", "ida");
    assertThat(refused.statusCode()).isEqualTo(429);
    // The clock runs: the debt is repaid by the milliseconds since, and Retry-After rounds up.
    assertThat(Long.parseLong(header(refused, "Retry-After"))).isBetween(10 * 8640L - 5, 10 * 8640L);
  }

  private void awaitNoReservations() {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    while (!tally.counters().keys("tally:hold:").isEmpty() && System.nanoTime() < deadline) {
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
    assertThat(tally.counters().keys("tally:hold:")).as("reservations held").isEmpty();
  }

  /** Waits until what is settled after a response has reached the limiter. */
  private void awaitAvailable(String rule, String user, long units) {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    long now;
    while ((now = limits.limiter(rule, user).available()) != units && System.nanoTime() < deadline) {
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
    assertThat(now).isEqualTo(units);
  }

  @Test
  void healthIndicatorReportsTheStoreUp() {
    HttpResponse<String> health = http.get("/actuator/health");
    assertThat(health.statusCode()).isEqualTo(200);
    JsonNode tally = json(health).get("components").get("tally");
    assertThat(tally.get("status").asString()).isEqualTo("UP");
    assertThat(tally.get("details").get("store").asString()).isEqualTo("file");
  }
}
