package dev.tally.spring.rules;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Tally;
import dev.tally.TimeSource;
import dev.tally.spring.Http;
import dev.tally.spring.RateLimitExceededException;
import dev.tally.spring.RateLimitVerdict;
import dev.tally.spring.TallyRateLimits;
import dev.tally.tck.ManualTimeSource;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.ActiveProfiles;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * Filter rules with conditions, predicates, plans and post-execution costs, on a real port with
 * the memory store and a clock that stands still. Charges settled after a response may land just
 * after the client has it, so the tests wait for the limiter's state before the next request.
 */
@SpringBootTest(classes = RulesApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles("rules")
@DirtiesContext
@ExtendWith(OutputCaptureExtension.class)
class RulesAppTest {
  /** One token of the rule llm (token-bucket 100/1d) comes back every 864 s. */
  static final long LLM_TOKEN_SECONDS = 86_400 / 100;
  /** One token of the rule tokens (token-bucket 10/1d) comes back every 8640 s. */
  static final long TOKEN_SECONDS = 86_400 / 10;

  static final ObjectMapper JSON = new ObjectMapper();

  @LocalServerPort
  int port;

  @Autowired
  TallyRateLimits limits;

  @Autowired
  RulesApp.Gate gate;

  @Autowired
  Tally tally;

  @Autowired
  TimeSource clock;

  Http http;

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

  /** Waits until the settlement after a response has reached the limiter. */
  void awaitAvailable(String rule, String key, long units) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    long now;
    while ((now = limits.limiter(rule, key).available()) != units && System.nanoTime() < deadline) {
      LockSupport.parkNanos(1_000_000);
    }
    assertThat(now).as("units left in %s for %s", rule, key).isEqualTo(units);
  }

  /** {@code value} once it equals {@code expected}, or its last value after 10 s. */
  static <T> T await(Supplier<T> value, T expected) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    T now;
    while (!(now = value.get()).equals(expected) && System.nanoTime() < deadline) {
      LockSupport.parkNanos(1_000_000);
    }
    return now;
  }

  @Test
  void onlyFailedLoginsCountAndTwentyConcurrentFailuresGetExactlyThree401s() throws Exception {
    for (int i = 0; i < 5; i++) {
      HttpResponse<String> ok = http.post("/login", "X-User", "bob", "X-Password", "right");
      assertThat(ok.statusCode()).isEqualTo(200);
      awaitAvailable("login-failures", "bob", 3);
    }

    gate.close();
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10)).build();
    HttpRequest wrong = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/login"))
        .header("X-User", "bob").header("X-Password", "wrong").timeout(Duration.ofSeconds(60))
        .POST(HttpRequest.BodyPublishers.noBody()).build();
    CountDownLatch answered = new CountDownLatch(17);
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      CompletableFuture<HttpResponse<String>> call = client.sendAsync(wrong, HttpResponse.BodyHandlers.ofString());
      call.thenRun(answered::countDown);
      calls.add(call);
    }
    // The three admitted wait in the handler, holding their units, while the other 17 are answered.
    boolean seventeenAnswered = answered.await(30, TimeUnit.SECONDS);
    List<Integer> early = calls.stream().filter(CompletableFuture::isDone).map(c -> c.join().statusCode()).toList();
    gate.open();
    List<Integer> statuses = calls.stream().map(c -> c.join().statusCode()).toList();
    assertThat(seventeenAnswered).as("17 answered while 3 were in the handler; answered early: %s", early).isTrue();
    assertThat(early).hasSize(17).containsOnly(429);
    assertThat(statuses.stream().filter(s -> s == 401).count()).as("statuses %s", statuses).isEqualTo(3);
    assertThat(statuses.stream().filter(s -> s == 429).count()).as("statuses %s", statuses).isEqualTo(17);

    // The three failures were charged: nothing left for bob, not even to try the right password.
    awaitAvailable("login-failures", "bob", 0);
    HttpResponse<String> after = http.post("/login", "X-User", "bob", "X-Password", "right");
    assertThat(after.statusCode()).isEqualTo(429);
    assertThat(header(after, "Retry-After")).isNotNull();
    assertThat(http.post("/login", "X-User", "eve", "X-Password", "wrong").statusCode()).isEqualTo(401);
  }

  /** Waits until the settlement after a response has put the limiter {@code seconds} from its next unit. */
  void awaitRetryAfter(String rule, String key, long seconds) {
    Supplier<Long> retryAfter = () -> {
      dev.tally.Decision next = limits.limiter(rule, key).peek();
      return next.allowed() ? 0L : next.retryAfter().toSeconds();
    };
    assertThat(await(retryAfter, seconds)).as("seconds until %s has a unit for %s", rule, key).isEqualTo(seconds);
  }

  @Test
  void aCostExpressionGivesBackTheSurplusAndTakesTheExcessIntoDebt() {
    HttpResponse<String> four = http.get("/tokens?used=4", "X-User", "carol");
    assertThat(four.statusCode()).isEqualTo(200);
    // The fields tell the state on admission: one unit reserved.
    assertThat(header(four, "RateLimit")).startsWith("\"tokens\";r=9;");
    awaitAvailable("tokens", "carol", 6);

    assertThat(header(http.get("/tokens?used=0", "X-User", "carol"), "RateLimit")).startsWith("\"tokens\";r=5;");
    awaitAvailable("tokens", "carol", 6);

    // 12 used, 6 left: the 6 beyond are taken into debt, which the next request waits out on top
    // of an empty bucket's wait (8640 s): 7 tokens' worth.
    assertThat(http.get("/tokens?used=12", "X-User", "carol").statusCode()).isEqualTo(200);
    awaitRetryAfter("tokens", "carol", 7 * TOKEN_SECONDS);
    HttpResponse<String> refused = http.get("/tokens?used=1", "X-User", "carol");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(header(refused, "Retry-After")).isEqualTo(Long.toString(7 * TOKEN_SECONDS));

    // A debt goes at most one full limit below empty: 25 used of a full 10 leave a debt of 10, not 15.
    assertThat(http.get("/tokens?used=25", "X-User", "dave").statusCode()).isEqualTo(200);
    awaitRetryAfter("tokens", "dave", 11 * TOKEN_SECONDS);
    assertThat(header(http.get("/tokens?used=1", "X-User", "dave"), "Retry-After"))
        .isEqualTo(Long.toString(11 * TOKEN_SECONDS));
  }

  /**
   * Twenty model calls at once, estimated at 20 tokens each against 100 a day: the five whose
   * estimates fit are let through, the fifteen others refused while those run; then each of the
   * five is charged what it really used (21 to 40 tokens, 115 to 190 in all), the excess over 100
   * as debt.
   */
  @Test
  void twentyConcurrentCallsLetThroughWhatTheEstimatesAllowAndAreChargedTheirRealCosts() throws Exception {
    gate.close();
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10)).build();
    CountDownLatch answered = new CountDownLatch(15);
    List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      HttpRequest call = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/llm?used=" + (21 + i)))
          .header("X-User", "fay").timeout(Duration.ofSeconds(60)).GET().build();
      CompletableFuture<HttpResponse<String>> sent = client.sendAsync(call, HttpResponse.BodyHandlers.ofString());
      sent.thenRun(answered::countDown);
      calls.add(sent);
    }
    // The five admitted wait in the handler, holding their estimates, while the other 15 are answered.
    boolean fifteenAnswered = answered.await(30, TimeUnit.SECONDS);
    List<Integer> early = calls.stream().filter(CompletableFuture::isDone).map(c -> c.join().statusCode()).toList();
    gate.open();
    assertThat(fifteenAnswered).as("15 answered while 5 were in the handler; answered early: %s", early).isTrue();
    assertThat(early).hasSize(15).containsOnly(429);
    long used = 0;
    int served = 0;
    for (int i = 0; i < 20; i++) {
      if (calls.get(i).join().statusCode() == 200) {
        served++;
        used += 21 + i;
      }
    }
    assertThat(served).isEqualTo(5);

    // 100 - used tokens left: a debt of used - 100, then one token to wait for, or the 20 of a
    // call's estimate.
    awaitRetryAfter("llm", "fay", (used - 100 + 1) * LLM_TOKEN_SECONDS);
    HttpResponse<String> after = http.get("/llm?used=1", "X-User", "fay");
    assertThat(after.statusCode()).isEqualTo(429);
    assertThat(header(after, "Retry-After")).isEqualTo(Long.toString((used - 100 + 20) * LLM_TOKEN_SECONDS));
    assertThat(tally.counters().keys("tally:hold:")).as("every reservation settled").isEmpty();
  }

  @Test
  void anAsynchronousCallIsSettledWhenItCompletes() {
    HttpResponse<String> call = http.get("/llm-async?used=5", "X-User", "hal");
    assertThat(call.statusCode()).isEqualTo(200);
    assertThat(header(call, "RateLimit")).as("the estimate reserved").startsWith("\"llm\";r=80;");
    awaitAvailable("llm", "hal", 95);
    assertThat(tally.counters().keys("tally:hold:")).isEmpty();
  }

  /**
   * A call still running when its reservation's ttl (10 s) ends, as one whose application stopped
   * would be: its reservation is settled at its estimate by itself, and the settlement that comes
   * after is refused, leaving the estimate charged.
   */
  @Test
  void aReservationNotSettledWithinItsTtlIsChargedItsEstimate(CapturedOutput output) throws Exception {
    gate.close();
    CompletableFuture<HttpResponse<String>> call = CompletableFuture.supplyAsync(
        () -> http.get("/llm?used=3", "X-User", "gus"));
    awaitAvailable("llm", "gus", 80);
    assertThat(tally.counters().keys("tally:hold:")).as("the call's reservation").hasSize(1);

    ((ManualTimeSource) clock).advance(Duration.ofSeconds(11));
    assertThat(tally.counters().keys("tally:hold:")).as("expired: settled at the estimate").isEmpty();
    assertThat(limits.limiter("llm", "gus").available()).isEqualTo(80);

    gate.open();
    assertThat(call.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(await(() -> output.getOut().contains("the response came after the reservation's ttl (PT10S"), true))
        .as("the late settlement refused and logged").isTrue();
    assertThat(limits.limiter("llm", "gus").available()).as("the estimate, not the 3 used").isEqualTo(80);
  }

  @Test
  void aZeroPermitCheckTakesNothingAndIsRefusedWhenNothingIsLeftAndThrowingItAnswers429() {
    assertThat(http.get("/peek/dan").statusCode()).isEqualTo(200);
    assertThat(http.get("/peek/dan").statusCode()).isEqualTo(200);
    assertThat(http.post("/spend/dan").statusCode()).isEqualTo(200);
    assertThat(http.post("/spend/dan").statusCode()).isEqualTo(200);
    assertThat(http.post("/spend/dan").statusCode()).isEqualTo(429);

    HttpResponse<String> refused = http.get("/peek/dan");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(header(refused, "Content-Type")).isEqualTo("application/problem+json");
    assertThat(Long.parseLong(header(refused, "Retry-After"))).isBetween(1L, 86400L / 2 + 1);
    JsonNode body = json(refused);
    assertThat(body.get("rule").asString()).isEqualTo("probe");
    assertThat(body.get("permits").asLong()).isZero();
    assertThat(body.get("remaining").asLong()).isZero();

    RateLimitVerdict fresh = limits.peek("probe", "erin");
    assertThat(fresh.allowed()).isTrue();
    assertThat(limits.limiter("probe", "erin").available()).isEqualTo(2);
    assertThatThrownBy(() -> new RateLimitExceededException(fresh))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("allowed");
  }

  @Test
  void aPlanExpressionChoosesTheLimitsAndAnUnknownPlanGetsTheDefault() {
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> free = http.get("/plans", "X-User", "alice");
      assertThat(free.statusCode()).isEqualTo(200);
      assertThat(header(free, "RateLimit-Policy")).isEqualTo("\"free\";q=2;w=86400");
    }
    HttpResponse<String> denied = http.get("/plans", "X-User", "alice");
    assertThat(denied.statusCode()).isEqualTo(429);
    assertThat(json(denied).get("rule").asString()).isEqualTo("filter-9.free");

    for (int i = 0; i < 5; i++) {
      HttpResponse<String> pro = http.get("/plans", "X-User", "alice", "X-Plan", "pro");
      assertThat(pro.statusCode()).isEqualTo(200);
      assertThat(header(pro, "RateLimit-Policy")).isEqualTo("\"pro\";q=5;w=86400");
    }
    assertThat(http.get("/plans", "X-User", "alice", "X-Plan", "pro").statusCode()).isEqualTo(429);
    // No such plan: the default, free, which alice has used up.
    HttpResponse<String> unknown = http.get("/plans", "X-User", "alice", "X-Plan", "gold");
    assertThat(unknown.statusCode()).isEqualTo(429);
    assertThat(header(unknown, "RateLimit-Policy")).isEqualTo("\"free\";q=2;w=86400");
  }

  @Test
  void skipConditionLetsMatchingRequestsThrough() {
    assertNotLimited(() -> http.get("/cond/skip", "X-Internal", "yes"));
    assertLimitedToTwo(() -> http.get("/cond/skip", "X-Internal", "no"));
  }

  @Test
  void executeConditionLimitsMatchingRequestsOnly() {
    assertNotLimited(() -> http.get("/cond/execute", "X-Tier", "partner"));
    assertNotLimited(() -> http.get("/cond/execute"));
    assertLimitedToTwo(() -> http.get("/cond/execute", "X-Tier", "anonymous"));
  }

  @Test
  void pathPredicateSelectsThePaths() {
    assertNotLimited(() -> http.get("/pred/elsewhere"));
    assertThat(http.get("/pred/path/a").statusCode()).isEqualTo(200);
    assertThat(http.get("/pred/other").statusCode()).isEqualTo(200);
    assertThat(http.get("/pred/path/b/c").statusCode()).isEqualTo(429);
  }

  @Test
  void methodPredicateSelectsTheMethods() {
    assertNotLimited(() -> http.get("/pred/method"));
    assertLimitedToTwo(() -> http.post("/pred/method"));
  }

  @Test
  void queryPredicateNeedsTheParameterWithOrWithoutAValue() {
    assertNotLimited(() -> http.get("/pred/query?other=1"));
    assertThat(http.get("/pred/query?debug").statusCode()).isEqualTo(200);
    assertThat(http.get("/pred/query?a=1&debug=yes").statusCode()).isEqualTo(200);
    assertThat(http.get("/pred/query?debug=").statusCode()).isEqualTo(429);
  }

  @Test
  void headerPredicateMatchesAValueByRegex() {
    assertNotLimited(() -> http.get("/pred/header", "Accept", "text/plain"));
    assertNotLimited(() -> http.get("/pred/header"));
    assertLimitedToTwo(() -> http.get("/pred/header", "Accept", "application/pdf"));
  }

  @Test
  void skipPredicatesSkipOnlyWhenAllMatch() {
    assertNotLimited(() -> http.get("/pred/skip?internal", "X-Trusted", "1"));
    assertThat(http.get("/pred/skip?internal").statusCode()).isEqualTo(200);
    assertThat(http.get("/pred/skip", "X-Trusted", "1").statusCode()).isEqualTo(200);
    assertThat(http.get("/pred/skip").statusCode()).isEqualTo(429);
  }

  @Test
  void filterAndAnnotationPoliciesBothReachTheResponseAndARefusalCostsTheFilterNothing() {
    HttpResponse<String> first = http.get("/both");
    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(header(first, "RateLimit-Policy")).isEqualTo("\"both\";q=4;w=86400, \"both-burst\";q=1;w=86400");
    assertThat(header(first, "RateLimit")).matches("\"both\";r=3;t=\\d+, \"both-burst\";r=0;t=\\d+");

    HttpResponse<String> refused = http.get("/both");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(header(refused, "RateLimit-Policy")).isEqualTo("\"both\";q=4;w=86400, \"both-burst\";q=1;w=86400");
    assertThat(header(refused, "RateLimit")).matches("\"both\";r=2;t=\\d+, \"both-burst\";r=0;t=\\d+");
    assertThat(json(refused).get("violated-policies").toString()).isEqualTo("[\"both-burst\"]");
    // The filter's unit for the refused call comes back.
    awaitAvailable("both", "global", 3);
  }

  @Test
  void annotationConditionsLeaveAnAnnotationOutOfACall() {
    assertNotLimited(() -> http.get("/exports/5", "X-Internal", "yes"));
    HttpResponse<String> small = http.get("/exports/5");
    assertThat(small.statusCode()).isEqualTo(200);
    assertThat(header(small, "RateLimit-Policy")).as("executeCondition false").isEqualTo("\"exports\";q=2;w=86400");
    HttpResponse<String> big = http.get("/exports/5000");
    assertThat(big.statusCode()).isEqualTo(200);
    assertThat(header(big, "RateLimit-Policy")).isEqualTo("\"exports\";q=2;w=86400, \"big-exports\";q=1;w=86400");
    assertThat(header(big, "RateLimit")).matches("\"exports\";r=0;t=\\d+, \"big-exports\";r=0;t=\\d+");
    assertThat(http.get("/exports/5").statusCode()).isEqualTo(429);
    assertThat(http.get("/exports/5", "X-Internal", "yes").statusCode()).as("skipped, and nothing else applies")
        .isEqualTo(200);
    HttpResponse<String> bigInternal = http.get("/exports/5000", "X-Internal", "yes");
    assertThat(bigInternal.statusCode()).as("exports skipped, big-exports applies").isEqualTo(429);
    assertThat(json(bigInternal).get("violated-policies").toString()).isEqualTo("[\"big-exports\"]");
  }

  private static void assertNotLimited(Supplier<HttpResponse<String>> call) {
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> r = call.get();
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(header(r, "RateLimit")).isNull();
    }
  }

  private static void assertLimitedToTwo(Supplier<HttpResponse<String>> call) {
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> r = call.get();
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(header(r, "RateLimit")).isNotNull();
    }
    assertThat(call.get().statusCode()).isEqualTo(429);
  }
}
