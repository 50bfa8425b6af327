package dev.tally.spring.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spring.Http;
import dev.tally.tck.RedisServerProcess;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Two instances of one application, each with its own Tally, on one Redis: together they grant
 * exactly the limit, however the concurrent requests fall between them.
 */
@SpringBootTest(classes = ServletApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "tally.limits.shared.limit=token-bucket 25/1d",
        "tally.filter.rules[0].paths=/api/items/**",
        "tally.filter.rules[0].key=global",
        "tally.filter.rules[0].rule=shared",
        "tally.filter.rules[0].failure-policy=throw"})
@ActiveProfiles("servlet") // its named rules, for the annotated controllers; the filter rules are replaced
@DirtiesContext
class TwoInstancesOneRedisTest {
  static final int LIMIT = 25;
  static final int REQUESTS = 120;
  static final RedisServerProcess REDIS = RedisServerProcess.start();
  static ConfigurableApplicationContext second;

  @LocalServerPort
  int port;

  @Autowired
  MeterRegistry registry;

  @DynamicPropertySource
  static void store(DynamicPropertyRegistry registry) {
    registry.add("tally.store", REDIS::uri);
  }

  @BeforeAll
  static void startSecondInstance() {
    // Command-line arguments, so that they win over application-servlet.yml as the first
    // instance's test properties do (builder properties would be mere defaults).
    second = new SpringApplicationBuilder(ServletApp.class).profiles("servlet").run(
        "--server.port=0",
        "--tally.store=" + REDIS.uri(),
        "--tally.limits.shared.limit=token-bucket 25/1d",
        "--tally.filter.rules[0].paths=/api/items/**",
        "--tally.filter.rules[0].key=global",
        "--tally.filter.rules[0].rule=shared",
        "--tally.filter.rules[0].failure-policy=throw");
  }

  @AfterAll
  static void stopSecondInstance() {
    second.close();
  }

  @Test
  void concurrentRequestsAcrossBothInstancesGetExactlyTheLimit() throws Exception {
    int secondPort = Integer.parseInt(second.getEnvironment().getProperty("local.server.port"));
    assertThat(secondPort).isNotEqualTo(port);
    List<Http> instances = List.of(new Http(port), new Http(secondPort));
    AtomicInteger allowed = new AtomicInteger();
    AtomicInteger denied = new AtomicInteger();
    AtomicInteger[] allowedBy = {new AtomicInteger(), new AtomicInteger()};
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < REQUESTS; i++) {
        int instance = i % 2;
        done.add(pool.submit(() -> {
          start.await();
          HttpResponse<String> r = instances.get(instance).get("/api/items/i" + instance);
          if (r.statusCode() == 200) {
            allowed.incrementAndGet();
            allowedBy[instance].incrementAndGet();
          } else if (r.statusCode() == 429) {
            denied.incrementAndGet();
          } else {
            throw new AssertionError("unexpected " + r.statusCode() + ": " + r.body());
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(allowed.get()).isEqualTo(LIMIT);
    assertThat(denied.get()).isEqualTo(REQUESTS - LIMIT);
    // Both instances took part, and each application's own registry counted its own grants.
    MeterRegistry secondRegistry = second.getBean(MeterRegistry.class);
    assertThat(count(registry, "allowed") + count(secondRegistry, "allowed")).isEqualTo(LIMIT);
    assertThat(count(registry, "allowed")).isEqualTo(allowedBy[0].get());
    assertThat(count(secondRegistry, "allowed")).isEqualTo(allowedBy[1].get());
    assertThat(count(registry, "denied") + count(secondRegistry, "denied")).isEqualTo(REQUESTS - LIMIT);

    // Afterwards both agree that nothing is left.
    for (Http h : instances) {
      HttpResponse<String> r = h.get("/api/items/after");
      assertThat(r.statusCode()).isEqualTo(429);
      assertThat(r.headers().firstValue("RateLimit").orElseThrow()).startsWith("\"shared\";r=0;");
    }
  }

  private static double count(MeterRegistry registry, String outcome) {
    var c = registry.find("tally.ratelimit.decisions").tags("rule", "shared", "outcome", outcome).counter();
    return c == null ? 0 : c.count();
  }
}
