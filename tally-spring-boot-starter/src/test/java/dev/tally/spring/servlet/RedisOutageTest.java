package dev.tally.spring.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spring.Http;
import dev.tally.tck.RedisServerProcess;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.ObjectMapper;

/**
 * The servlet application when its Redis dies: each rule answers by its failure policy (with no
 * invented quota), the health indicator reports the outage without taking the application's
 * status down, and the fail-open and fail-closed answers are counted.
 */
@SpringBootTest(classes = ServletApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "tally.store-options.timeout=10s", // connecting on a loaded CI machine can take seconds
        "tally.limits.open.limit=token-bucket 5/1d",
        "tally.limits.closed.limit=token-bucket 5/1d",
        "tally.limits.closed.failure-policy=fail-closed",
        "tally.limits.strict.limit=token-bucket 5/1d",
        "tally.limits.strict.failure-policy=throw",
        "tally.filter.rules[0].paths=/api/items/open",
        "tally.filter.rules[0].rule=open",
        "tally.filter.rules[1].paths=/api/items/closed",
        "tally.filter.rules[1].rule=closed",
        "tally.filter.rules[2].paths=/api/items/strict",
        "tally.filter.rules[2].rule=strict",
        "management.endpoints.web.exposure.include=health",
        "management.endpoint.health.show-details=always"})
@ActiveProfiles("servlet") // its named rules, for the annotated controllers; the filter rules are replaced
@DirtiesContext
class RedisOutageTest {
  static final RedisServerProcess REDIS = RedisServerProcess.start();

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry registry;

  @DynamicPropertySource
  static void store(DynamicPropertyRegistry registry) {
    registry.add("tally.store", REDIS::uri);
  }

  @Test
  void eachRuleAnswersByItsFailurePolicyAndHealthReportsTheOutage() {
    Http http = new Http(port);
    for (String rule : new String[] {"open", "closed", "strict"}) {
      assertThat(http.get("/api/items/" + rule).statusCode()).as(rule).isEqualTo(200);
    }
    assertThat(http.get("/actuator/health").statusCode()).isEqualTo(200);

    REDIS.close();

    HttpResponse<String> open = http.get("/api/items/open");
    assertThat(open.statusCode()).isEqualTo(200);
    assertThat(open.headers().firstValue("RateLimit")).isEmpty();
    HttpResponse<String> closed = http.get("/api/items/closed");
    assertThat(closed.statusCode()).isEqualTo(503);
    assertThat(closed.headers().firstValue("RateLimit")).isEmpty();
    assertThat(closed.headers().firstValue("Retry-After")).contains("1");
    assertThat(closed.body()).contains("rate-limit store is unavailable").contains("\"rule\":\"closed\"");
    HttpResponse<String> strict = http.get("/api/items/strict");
    assertThat(strict.statusCode()).isEqualTo(503);
    assertThat(strict.headers().firstValue("Content-Type")).contains("application/problem+json");
    assertThat(new ObjectMapper().readTree(strict.body()).get("status").asInt()).isEqualTo(503);
    assertThat(strict.body()).doesNotContain(String.valueOf(REDIS.port()));

    HttpResponse<String> health = http.get("/actuator/health");
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(new ObjectMapper().readTree(health.body()).get("status").asString()).isEqualTo("UP");
    assertThat(new ObjectMapper().readTree(health.body()).get("components").get("tally").get("status").asString())
        .isEqualTo("UNKNOWN");

    assertThat(registry.get("tally.failure.policy").tags("policy", "fail_open").counter().count()).isEqualTo(1);
    assertThat(registry.get("tally.failure.policy").tags("policy", "fail_closed").counter().count()).isEqualTo(1);
  }
}
