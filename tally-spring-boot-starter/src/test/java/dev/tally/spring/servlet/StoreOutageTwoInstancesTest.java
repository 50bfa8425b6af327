package dev.tally.spring.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spring.Http;
import dev.tally.tck.RedisServerProcess;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Two instances of one application on one real Redis, with the starter's defaults (circuit
 * breaker 5 failures / 1 s, started without the store if need be, health out of the overall
 * status): Redis stopped, then frozen. Once the breaker is open requests answer at once: none
 * waits for the store (the breaker's probe is a background read, so not even one request per
 * cool-down does), 99% within 50 ms; fail-open rules serve, fail-closed rules refuse with 503
 * and no invented quota; /actuator/health stays UP; an instance started during the outage starts
 * and serves; once Redis is back the limits apply again, exactly, within the probe interval.
 */
@ExtendWith(OutputCaptureExtension.class)
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class StoreOutageTwoInstancesTest {
  static final RedisServerProcess REDIS = RedisServerProcess.start();
  static final Duration TIMEOUT = Duration.ofMillis(500);
  static final long FAST_MILLIS = 50;
  static final int LIMIT = 3;
  static final List<ConfigurableApplicationContext> INSTANCES = new ArrayList<>();
  static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void startTwo() {
    start();
    start();
  }

  @AfterAll
  static void stopAll() {
    INSTANCES.forEach(ConfigurableApplicationContext::close);
    REDIS.close();
  }

  static Http start() {
    ConfigurableApplicationContext c = new SpringApplicationBuilder(ServletApp.class).profiles("servlet").run(
        "--server.port=0",
        "--tally.store=" + REDIS.uri(),
        "--tally.store-options.timeout=" + TIMEOUT.toMillis() + "ms",
        "--tally.limits.open.limit=token-bucket " + LIMIT + "/1d",
        "--tally.limits.closed.limit=token-bucket " + LIMIT + "/1d",
        "--tally.limits.closed.failure-policy=fail-closed",
        "--tally.filter.rules[0].paths=/api/items/open",
        "--tally.filter.rules[0].key=header:X-Key",
        "--tally.filter.rules[0].rule=open",
        "--tally.filter.rules[1].paths=/api/items/closed",
        "--tally.filter.rules[1].key=header:X-Key",
        "--tally.filter.rules[1].rule=closed",
        "--management.endpoints.web.exposure.include=health",
        "--management.endpoint.health.show-details=always");
    INSTANCES.add(c);
    return http(c);
  }

  static Http http(ConfigurableApplicationContext c) {
    return new Http(Integer.parseInt(c.getEnvironment().getProperty("local.server.port")));
  }

  static List<Http> instances() {
    return INSTANCES.stream().map(StoreOutageTwoInstancesTest::http).toList();
  }

  @Test
  void anOutageKeepsTheServiceUpAndTheLimitsComeBack(CapturedOutput output) throws Exception {
    assertExactLimit("before");

    // Stopped: connections refused.
    REDIS.close();
    openEveryBreaker();
    assertFastAndByPolicy("stopped", 2_500);
    assertHealthUpWithTheOutageInDetails();

    // An instance started during the outage starts, says so in one line, and serves.
    long started = System.nanoTime();
    Http late = start();
    assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(60));
    assertThat(output.getOut()).containsPattern("Tally store redis: not reachable at startup, opened when it"
        + " answers; circuit breaker after 5 failures, cool-down 1000 ms; counters on failure: throw; rules on"
        + " failure: .*open=fail-open, closed=fail-closed");
    assertThat(late.get("/api/items/open", "X-Key", "late").statusCode()).isEqualTo(200);
    assertThat(late.get("/api/items/closed", "X-Key", "late").statusCode()).isEqualTo(503);
    openEveryBreaker();
    assertFastAndByPolicy("stopped, three instances", 1_500);

    REDIS.restart();
    awaitLimitsEverywhere("after the restart");
    assertExactLimit("after the restart");

    // Frozen: connections open, nothing answers; each call waits the timeout until the breaker opens.
    REDIS.freeze();
    try {
      openEveryBreaker();
      assertFastAndByPolicy("frozen", 2_500);
      assertHealthUpWithTheOutageInDetails();
    } finally {
      REDIS.resume();
    }
    awaitLimitsEverywhere("after the resume");
    assertExactLimit("after the resume");
  }

  private static int round;

  /** Requests over every instance for a fresh key: exactly LIMIT pass each rule, then 429 with the fields. */
  private static void assertExactLimit(String when) {
    String key = "k" + (++round);
    for (String rule : new String[] {"open", "closed"}) {
      int passed = 0;
      for (int i = 0; i < 3 * LIMIT; i++) {
        Http h = instances().get(i % INSTANCES.size());
        HttpResponse<String> r = h.get("/api/items/" + rule, "X-Key", key);
        assertThat(r.statusCode()).as(when + " " + rule).isIn(200, 429);
        assertThat(r.headers().firstValue("RateLimit-Policy")).as(when).contains("\"" + rule + "\";q=" + LIMIT + ";w=86400");
        passed += r.statusCode() == 200 ? 1 : 0;
      }
      assertThat(passed).as(when + ": " + rule + " passes exactly the limit over every instance").isEqualTo(LIMIT);
    }
  }

  /** Sends requests on every instance at once until its circuit is open (each waits at most the timeout). */
  private static void openEveryBreaker() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(INSTANCES.size());
    try {
      List<Future<?>> done = new ArrayList<>();
      for (Http h : instances()) {
        done.add(pool.submit(() -> {
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
          while (!circuit(h).equals("OPEN") && System.nanoTime() < deadline) {
            h.get("/api/items/open", "X-Key", "warm");
          }
          assertThat(circuit(h)).isEqualTo("OPEN");
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static String circuit(Http h) {
    return JSON.readTree(h.get("/actuator/health/tally").body()).path("details").path("circuit").asString();
  }

  /**
   * For {@code millis}, both rules on every instance: fail-open serves with no RateLimit fields,
   * fail-closed refuses with 503, Retry-After and a body that says the store is unavailable.
   * Called right after {@link #openEveryBreaker()}, whose requests (the ones that wait for the
   * store and open the breaker) have all returned, so every request timed here is sent with the
   * breaker open; the breaker is checked to be still open or probing at the end, so none of them
   * ran with it closed either.
   *
   * <p>Every request within 50 ms once the breaker is open is what the outage must show, and what
   * an idle machine shows: with Redis stopped, 704 requests over two instances had a p99 of 10 ms
   * and a slowest of 24 ms, 456 over three a slowest of 11 ms; frozen, 1,512 requests a slowest of
   * 23 ms; none over 50 ms. The test asserts the 99th percentile rather than the slowest because
   * CI runs it on two cores shared with other builds, where a request that waits for a core or a
   * garbage collection is not waiting for the store (a few requests in a hundred took 50 to 140 ms
   * at a load average of 12 to 15). What tells a store wait from the machine's load is the bound
   * on the slowest: a request that waited for the store would take the whole timeout (the
   * breaker's probe is a background read, no request's), so none may take half of it. The count
   * over 50 ms, the percentiles and the slowest are printed.
   */
  private static void assertFastAndByPolicy(String when, long millis) {
    List<Http> all = instances();
    List<Long> took = new ArrayList<>();
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < end) {
      for (Http h : all) {
        for (String rule : new String[] {"open", "closed"}) {
          long start = System.nanoTime();
          HttpResponse<String> r = h.get("/api/items/" + rule, "X-Key", "outage");
          took.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
          assertThat(r.headers().firstValue("RateLimit")).as(when + " " + rule + ": no invented quota").isEmpty();
          assertThat(r.headers().firstValue("RateLimit-Policy")).as(when).isEmpty();
          if (rule.equals("open")) {
            assertThat(r.statusCode()).as(when + " fail-open").isEqualTo(200);
          } else {
            assertThat(r.statusCode()).as(when + " fail-closed").isEqualTo(503);
            assertThat(r.headers().firstValue("Retry-After")).as(when).contains("1");
            assertThat(r.body()).contains("\"status\":503").contains("rate-limit store is unavailable")
                .doesNotContain("left").doesNotContain(String.valueOf(REDIS.port()));
          }
        }
      }
    }
    List<Long> sorted = took.stream().sorted().toList();
    long slow = took.stream().filter(t -> t > FAST_MILLIS).count();
    long p99 = sorted.get(sorted.size() * 99 / 100);
    long max = sorted.get(sorted.size() - 1);
    System.out.printf("%s: %d requests, p50 %d ms, p90 %d ms, p99 %d ms, max %d ms, %d over %d ms%n", when,
        took.size(), sorted.get(sorted.size() / 2), sorted.get(sorted.size() * 9 / 10), p99, max, slow, FAST_MILLIS);
    // Without the breaker every request on a frozen store would wait the timeout, once per policy;
    // with a probe made by a caller, one request per instance per cool-down would.
    assertThat(max).as(when + ": no request waits for the store, of " + sorted).isLessThan(TIMEOUT.toMillis() / 2);
    assertThat(p99).as(when + ": the 99th percentile, of " + sorted).isLessThanOrEqualTo(FAST_MILLIS);
    for (Http h : all) {
      assertThat(circuit(h)).as(when + ": the breaker stayed open while the requests were timed").isIn("OPEN",
          "HALF_OPEN");
    }
  }

  private static void assertHealthUpWithTheOutageInDetails() {
    for (Http h : instances()) {
      HttpResponse<String> health = h.get("/actuator/health");
      assertThat(health.statusCode()).isEqualTo(200);
      JsonNode body = JSON.readTree(health.body());
      assertThat(body.get("status").asString()).isEqualTo("UP");
      JsonNode tally = body.get("components").get("tally");
      assertThat(tally.get("status").asString()).isEqualTo("UNKNOWN");
      assertThat(tally.get("details").get("reachable").asBoolean()).isFalse();
      assertThat(tally.get("details").get("circuit").asString()).isIn("OPEN", "HALF_OPEN");
    }
  }

  /** Polls every instance until a request is decided by the store again; within a probe interval and the reconnect. */
  private static void awaitLimitsEverywhere(String when) {
    for (Http h : instances()) {
      long start = System.nanoTime();
      long deadline = start + TimeUnit.SECONDS.toNanos(10);
      HttpResponse<String> r;
      do {
        r = h.get("/api/items/open", "X-Key", "probe");
      } while (r.headers().firstValue("RateLimit").isEmpty() && System.nanoTime() < deadline);
      long took = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      System.out.printf("%s: limits apply again after %d ms%n", when, took);
      assertThat(r.headers().firstValue("RateLimit")).as(when).isPresent();
      // One cool-down for the probe, plus Lettuce's reconnect (at most 1 s apart) and the load.
      assertThat(took).as(when + ": limits apply again within the probe interval").isLessThan(3_000);
    }
  }
}
