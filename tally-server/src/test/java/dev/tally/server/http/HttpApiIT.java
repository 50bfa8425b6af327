package dev.tally.server.http;

import static dev.tally.server.http.Responses.json;
import static dev.tally.server.http.Responses.ok;
import static dev.tally.server.http.Responses.status;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every endpoint of the HTTP API, against one real server process on the memory store. */
class HttpApiIT {
  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:");

  static String path(String key) {
    return URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
  }

  // ------------------------------------------------------------------ counters

  @Test
  void incrStartsAtDefaultPlusDeltaAndReturnsTheNewValue() {
    assertThat(ok(server.post("/v1/counters/views/incr", null)).toString())
        .isEqualTo("{\"key\":\"views\",\"value\":1}");
    assertThat(ok(server.post("/v1/counters/views/incr", "{\"delta\":10}")).get("value").asLong()).isEqualTo(11);
    assertThat(ok(server.post("/v1/counters/other/incr", "{\"delta\":1,\"default\":10}")).get("value").asLong())
        .isEqualTo(11);
    assertThat(ok(server.post("/v1/counters/zero/incr", "{\"delta\":0,\"default\":0}")).get("value").asLong())
        .isZero();
  }

  @Test
  void decrSubtractsAndDoesNotNegateTheDefault() {
    assertThat(ok(server.post("/v1/counters/d/decr", "{\"delta\":1,\"default\":10}")).get("value").asLong())
        .isEqualTo(9);
    assertThat(ok(server.post("/v1/counters/d/decr", null)).get("value").asLong()).isEqualTo(8);
  }

  @Test
  void mustExistNeverCreates() {
    JsonNode e = status(404, server.post("/v1/counters/absent/incr", "{\"delta\":1,\"mustExist\":true}"));
    assertThat(e.get("error").asText()).isEqualTo("not_found");
    assertThat(e.get("message").asText())
        .isEqualTo("counter 'absent' does not exist (or has expired), and mustExist forbids creating it");
    status(404, server.get("/v1/counters/absent"));
    ok(server.post("/v1/counters/present/incr", null));
    assertThat(ok(server.post("/v1/counters/present/decr", "{\"mustExist\":true}")).get("value").asLong())
        .isZero();
  }

  @Test
  void boundsRefuseOrSaturateAndBadOnesChangeNothing() {
    ok(server.send("PUT", "/v1/counters/bq", "{\"value\":3}"));
    JsonNode refused = ok(server.post("/v1/counters/bq/decr", "{\"delta\":5,\"min\":0}"));
    assertThat(refused.get("applied").asBoolean()).isFalse();
    assertThat(refused.get("value").asLong()).isEqualTo(3);
    JsonNode taken = ok(server.post("/v1/counters/bq/decr", "{\"delta\":3,\"min\":0}"));
    assertThat(taken.get("applied").asBoolean()).isTrue();
    assertThat(taken.get("value").asLong()).isZero();
    JsonNode capped = ok(server.post("/v1/counters/bq/incr", "{\"delta\":50,\"max\":10,\"onBound\":\"saturate\"}"));
    assertThat(capped.get("value").asLong()).isEqualTo(10);
    assertThat(capped.get("applied").asBoolean()).isTrue();
    assertThat(status(400, server.post("/v1/counters/bq/incr", "{\"min\":5,\"max\":4}")).get("message").asText())
        .contains("min (5) is greater than max (4)");
    status(400, server.post("/v1/counters/bq/incr", "{\"onBound\":\"saturate\"}"));
    status(400, server.post("/v1/counters/bq/incr", "{\"max\":10,\"onBound\":\"clamp\"}"));
    status(400, server.post("/v1/counters/bq/incr", "{\"delta\":0.5,\"max\":10}"));
    status(400, server.post("/v1/counters/bnew/decr", "{\"default\":-1,\"min\":0}"));
    status(404, server.get("/v1/counters/bnew"));
    assertThat(ok(server.get("/v1/counters/bq")).get("value").asLong()).isEqualTo(10);
  }

  @Test
  void aDecimalDeltaMakesAFloatingCounter() {
    assertThat(ok(server.post("/v1/counters/f/incr", "{\"delta\":1.5}")).get("value").asDouble()).isEqualTo(1.5);
    assertThat(ok(server.get("/v1/counters/f")).get("value").isFloatingPointNumber()).isTrue();
    // an integer delta adds to a floating counter, which stays floating (Redis's INCRBYFLOAT)
    JsonNode two = ok(server.post("/v1/counters/f/incr", "{\"delta\":1}"));
    assertThat(two.get("value").isFloatingPointNumber()).isTrue();
    assertThat(two.get("value").asDouble()).isEqualTo(2.5);
    assertThat(ok(server.post("/v1/counters/f/decr", "{\"delta\":2}")).get("value").asDouble()).isEqualTo(0.5);
    JsonNode e = status(409, server.post("/v1/counters/f/incr", "{\"delta\":1,\"mustExist\":true}"));
    assertThat(e.get("message").asText()).contains("mustExist");
    assertThat(ok(server.post("/v1/counters/f/pop", null)).get("value").asDouble()).isEqualTo(0.5);
  }

  @Test
  void overflowIsAConflictAndChangesNothing() {
    ok(server.send("PUT", "/v1/counters/big", "{\"value\":9223372036854775807}"));
    JsonNode e = status(409, server.post("/v1/counters/big/incr", null));
    assertThat(e.get("error").asText()).isEqualTo("conflict");
    assertThat(ok(server.get("/v1/counters/big")).get("value").asLong()).isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void getReturnsTheValueOr404() {
    JsonNode e = status(404, server.get("/v1/counters/never-set"));
    // RFC 9457: type, title, status, detail; error and message stay for older clients
    assertThat(e.toString()).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Not Found\","
        + "\"status\":404,\"detail\":\"counter 'never-set' does not exist (or has expired)\","
        + "\"error\":\"not_found\",\"message\":\"counter 'never-set' does not exist (or has"
        + " expired)\"}");
    ok(server.post("/v1/counters/g/incr", "{\"delta\":7}"));
    assertThat(ok(server.get("/v1/counters/g")).toString()).isEqualTo("{\"key\":\"g\",\"value\":7}");
  }

  @Test
  void putSetsAValueWithAnOptionalTtl() {
    assertThat(ok(server.send("PUT", "/v1/counters/p", "{\"value\":5,\"ttl\":\"40d\"}")).toString())
        .isEqualTo("{\"key\":\"p\",\"value\":5}");
    JsonNode ttl = ok(server.get("/v1/counters/p/ttl"));
    assertThat(ttl.get("ttl").asText()).isEqualTo("40d");
    assertThat(ttl.get("ttlMillis").asLong()).isBetween(40L * 86_400_000 - 60_000, 40L * 86_400_000);
    ok(server.send("PUT", "/v1/counters/p", "{\"value\":6}"));
    assertThat(ok(server.get("/v1/counters/p/ttl")).get("ttl").isNull()).isTrue();
  }

  @Test
  void addSetsOnlyAMissingCounter() {
    assertThat(ok(server.post("/v1/counters/quota:42/add", "{\"value\":1000,\"ttl\":\"40d\"}")).get("added")
        .asBoolean()).isTrue();
    assertThat(ok(server.post("/v1/counters/quota:42/add", "{\"value\":5}")).toString())
        .isEqualTo("{\"key\":\"quota:42\",\"added\":false}");
    assertThat(ok(server.get("/v1/counters/quota:42")).get("value").asLong()).isEqualTo(1000);
  }

  @Test
  void popReadsAndDeletesInOneStep() {
    ok(server.post("/v1/counters/pending/incr", "{\"delta\":3}"));
    assertThat(ok(server.post("/v1/counters/pending/pop", null)).get("value").asLong()).isEqualTo(3);
    status(404, server.get("/v1/counters/pending"));
    status(404, server.post("/v1/counters/pending/pop", null));
  }

  @Test
  void deleteRemovesOr404() {
    ok(server.post("/v1/counters/gone/incr", null));
    assertThat(ok(server.send("DELETE", "/v1/counters/gone", null)).toString())
        .isEqualTo("{\"key\":\"gone\",\"deleted\":true}");
    status(404, server.send("DELETE", "/v1/counters/gone", null));
  }

  @Test
  void touchSetsOrRemovesTheExpiry() {
    ok(server.post("/v1/counters/t/incr", null));
    assertThat(ok(server.post("/v1/counters/t/touch", "{\"ttl\":\"1h\"}")).get("ttl").asText()).isEqualTo("1h");
    assertThat(ok(server.get("/v1/counters/t/ttl")).get("ttl").asText()).isEqualTo("1h");
    assertThat(ok(server.post("/v1/counters/t/touch", "{\"ttl\":null}")).get("ttl").isNull()).isTrue();
    // Longer than a store keeps (about 146 years): kept, and answered, as the longest it keeps.
    JsonNode longest = ok(server.post("/v1/counters/t/touch", "{\"ttl\":\"200000000000d\"}"));
    assertThat(longest.get("ttlMillis").asLong()).isEqualTo(dev.tally.Counters.MAX_TTL.toMillis());
    assertThat(ok(server.get("/v1/counters/t/ttl")).get("ttlMillis").asLong())
        .isBetween(dev.tally.Counters.MAX_TTL.toMillis() - 60_000, dev.tally.Counters.MAX_TTL.toMillis());
    status(400, server.post("/v1/counters/t/touch", "{}"));
    status(404, server.post("/v1/counters/no-such/touch", "{\"ttl\":\"1h\"}"));
    status(404, server.get("/v1/counters/no-such/ttl"));
  }

  @Test
  void keysAreListedByPrefixSortedAndBounded() {
    for (String k : new String[] {"list:b", "list:a", "list:c", "other:x"}) {
      ok(server.post("/v1/counters/" + k + "/incr", null));
    }
    assertThat(ok(server.get("/v1/counters?prefix=list:")).toString())
        .isEqualTo("{\"prefix\":\"list:\",\"keys\":[\"list:a\",\"list:b\",\"list:c\"],\"truncated\":false}");
    JsonNode two = ok(server.get("/v1/counters?prefix=list:&limit=2"));
    assertThat(two.toString()).isEqualTo("{\"prefix\":\"list:\",\"keys\":[\"list:a\",\"list:b\"],"
        + "\"truncated\":true,\"next\":\"list:b\"}");
    // the cursor: the page after the last key listed, then nothing past the end
    assertThat(ok(server.get("/v1/counters?prefix=list:&limit=2&after=list:b")).toString())
        .isEqualTo("{\"prefix\":\"list:\",\"keys\":[\"list:c\"],\"truncated\":false}");
    assertThat(ok(server.get("/v1/counters?prefix=list:&after=list:bb")).get("keys").toString())
        .as("strictly after, whether or not the key exists").isEqualTo("[\"list:c\"]");
    assertThat(ok(server.get("/v1/counters?prefix=list:&after=list:c")).get("keys")).isEmpty();
    status(400, server.get("/v1/counters?prefix=list:&limit=0"));
    status(400, server.get("/v1/counters?prefx=list:"));
  }

  @Test
  void keysWithSlashesSpacesAndUnicodeRoundTrip() {
    String key = "req:path:/a b/é😀";
    ok(server.post("/v1/counters/" + path(key) + "/incr", null));
    assertThat(ok(server.get("/v1/counters/" + path(key))).get("key").asText()).isEqualTo(key);
    assertThat(ok(server.get("/v1/counters?prefix=" + path("req:path:/"))).get("keys").get(0).asText())
        .isEqualTo(key);
  }

  @Test
  void aTransactionAppliesEveryOperationInOrder() {
    ok(server.send("PUT", "/v1/counters/tx:del", "{\"value\":1}"));
    JsonNode r = ok(server.post("/v1/transactions", "{\"ops\":["
        + "{\"op\":\"incr\",\"key\":\"tx:a\"},"
        + "{\"op\":\"incr\",\"key\":\"tx:a\",\"delta\":5},"
        + "{\"op\":\"decr\",\"key\":\"tx:b\",\"delta\":2,\"default\":10},"
        + "{\"op\":\"put\",\"key\":\"tx:c\",\"value\":7,\"ttl\":\"1h\"},"
        + "{\"op\":\"get\",\"key\":\"tx:missing\"},"
        + "{\"op\":\"delete\",\"key\":\"tx:del\"}]}"));
    assertThat(r.toString()).isEqualTo("{\"results\":[{\"key\":\"tx:a\",\"value\":1},"
        + "{\"key\":\"tx:a\",\"value\":6},{\"key\":\"tx:b\",\"value\":8},{\"key\":\"tx:c\",\"value\":7},"
        + "{\"key\":\"tx:missing\",\"value\":null},{\"key\":\"tx:del\",\"deleted\":true}]}");
  }

  @Test
  void aTransactionThatFailsAppliesNothing() {
    JsonNode e = status(404, server.post("/v1/transactions", "{\"ops\":["
        + "{\"op\":\"incr\",\"key\":\"txf:a\"},"
        + "{\"op\":\"incr\",\"key\":\"txf:absent\",\"mustExist\":true}]}"));
    assertThat(e.get("error").asText()).isEqualTo("not_found");
    status(404, server.get("/v1/counters/txf:a"));
    status(400, server.post("/v1/transactions", "{\"ops\":[{\"op\":\"frob\",\"key\":\"a\"}]}"));
    status(400, server.post("/v1/transactions", "{\"ops\":[]}"));
  }

  // ------------------------------------------------------------------ limiters

  @Test
  void aDeniedRequestGets429WithTheRateLimitFieldsAndRetryAfter() {
    String body = "{\"limit\":{\"tokenBucket\":\"1/1h\"}}";
    HttpResponse<String> first = server.post("/v1/limiters/api:user:42/try", body);
    JsonNode d = ok(first);
    assertThat(d.get("allowed").asBoolean()).isTrue();
    assertThat(d.get("remaining").asLong()).isZero();
    assertThat(first.headers().firstValue("RateLimit-Policy")).hasValue("\"default\";q=1;w=3600");
    assertThat(first.headers().firstValue("RateLimit")).hasValue("\"default\";r=0;t=3600");
    assertThat(first.headers().firstValue("Retry-After")).isEmpty();

    HttpResponse<String> second = server.post("/v1/limiters/api:user:42/try", body);
    JsonNode denied = status(429, second);
    assertThat(denied.get("allowed").asBoolean()).isFalse();
    assertThat(denied.get("retryAfterMillis").asLong()).isBetween(3_590_000L, 3_600_000L);
    assertThat(second.headers().firstValue("RateLimit-Policy")).hasValue("\"default\";q=1;w=3600");
    assertThat(second.headers().firstValue("RateLimit")).hasValue("\"default\";r=0;t=3600");
    assertThat(second.headers().firstValue("Retry-After")).hasValue("3600");
  }

  @Test
  void aJointDecisionTakesFromEveryLimiterOrAnswers429NamingTheOneThatRefused() {
    String body = "{\"permits\":2,\"limiters\":[{\"name\":\"{j}:user\",\"limit\":{\"tokenBucket\":\"3/1h\"}},"
        + "{\"name\":\"{j}:global\",\"limits\":[{\"fixedWindow\":\"100/1h\"},{\"tokenBucket\":\"10/1h\"}]}]}";
    JsonNode granted = ok(server.post("/v1/limiters:decide", body));
    assertThat(granted.get("allowed").asBoolean()).isTrue();
    assertThat(granted.get("refusedBy").isNull()).isTrue();
    assertThat(granted.get("limiters").get(0).get("remaining").asLong()).isEqualTo(1);
    assertThat(granted.get("limiters").get(1).get("remaining").asLong()).isEqualTo(8);

    HttpResponse<String> second = server.post("/v1/limiters:decide", body);
    JsonNode refused = status(429, second);
    assertThat(refused.get("error").asText()).isEqualTo("denied");
    assertThat(refused.get("refusedBy").asText()).isEqualTo("{j}:user");
    assertThat(refused.get("refusedLimit").asInt()).isZero();
    assertThat(refused.get("retryAfterMillis").asLong()).isPositive();
    assertThat(refused.get("limiters").get(1).get("allowed").asBoolean()).as("would have allowed").isTrue();
    assertThat(refused.get("limiters").get(1).get("remaining").asLong()).as("nothing taken").isEqualTo(8);
    assertThat(second.headers().firstValue("Retry-After")).isPresent();

    status(400, server.post("/v1/limiters:decide", "{\"limiters\":[]}"));
    JsonNode twice = status(400, server.post("/v1/limiters:decide", "{\"limiters\":["
        + "{\"name\":\"{j}:a\",\"limit\":{\"tokenBucket\":\"3/1h\"}},"
        + "{\"name\":\"{j}:a\",\"limit\":{\"tokenBucket\":\"3/1h\"}}]}"));
    assertThat(twice.get("detail").asText()).contains("twice");
  }

  @Test
  void severalLimitsAreNamedPoliciesEachReportedWithItsOwnReset() {
    String body = "{\"limits\":[{\"tokenBucket\":\"100/1m\"},{\"fixedWindow\":\"2/1h\",\"policy\":\"hourly\"}]}";
    ok(server.post("/v1/limiters/multi/try", body));
    HttpResponse<String> second = server.post("/v1/limiters/multi/try", body);
    ok(second);
    assertThat(second.headers().firstValue("RateLimit-Policy"))
        .hasValue("\"default\";q=100;w=60, \"hourly\";q=2;w=3600");
    // The bucket's reset is its own (a second or two for two tokens), not the hour's.
    String fields = second.headers().firstValue("RateLimit").orElseThrow();
    assertThat(fields).matches("\"default\";r=9[89];t=[0-2], \"hourly\";r=0;t=\\d+");
    assertThat(Long.parseLong(fields.substring(fields.lastIndexOf('=') + 1))).isBetween(1L, 3600L);
    HttpResponse<String> third = server.post("/v1/limiters/multi/try", body);
    status(429, third);
    assertThat(third.headers().firstValue("Retry-After")).isPresent();
  }

  @Test
  void everyAlgorithmIsAcceptedAndDescribedInThePolicyField() {
    String[][] cases = {
        {"tokenBucket", "10:1/1s", "\"default\";q=10;w=10"},
        {"leakyBucket", "100/1m", "\"default\";q=100;w=60"},
        {"gcra", "15:30/60s", "\"default\";q=16;w=32"},
        {"fixedWindow", "100/1h", "\"default\";q=100;w=3600"},
        {"slidingWindow", "100/1h", "\"default\";q=100;w=3600"},
        {"quota", "1000/day@UTC", "\"default\";q=1000;w=86400"},
    };
    for (String[] c : cases) {
      HttpResponse<String> r = server.post("/v1/limiters/algo:" + c[0] + "/try",
          "{\"permits\":1,\"limit\":{\"" + c[0] + "\":\"" + c[1] + "\"}}");
      assertThat(ok(r).get("allowed").asBoolean()).as(c[0]).isTrue();
      assertThat(r.headers().firstValue("RateLimit-Policy")).as(c[0]).hasValue(c[2]);
    }
  }

  @Test
  void aRequestLargerThanTheLimitIsDeniedWithoutRetryAfter() {
    HttpResponse<String> r = server.post("/v1/limiters/huge/try",
        "{\"permits\":11,\"limit\":{\"tokenBucket\":\"10/1s\"}}");
    JsonNode d = status(429, r);
    assertThat(d.get("retryAfterMillis").isNull()).isTrue();
    assertThat(d.get("message").asText()).contains("can never be granted");
    assertThat(r.headers().firstValue("Retry-After")).isEmpty();
  }

  @Test
  void acquireWaitsUpToMaxWaitWithoutFailingEarly() {
    String limit = "\"limit\":{\"tokenBucket\":\"1/1s\"}";
    ok(server.post("/v1/limiters/wait/acquire", "{" + limit + "}"));
    long t0 = System.nanoTime();
    HttpResponse<String> quick = server.post("/v1/limiters/wait/acquire", "{\"maxWait\":\"100ms\"," + limit + "}");
    status(429, quick);
    assertThat((System.nanoTime() - t0) / 1_000_000).as("gives up at once: it cannot fit in 100ms")
        .isLessThan(900);
    JsonNode waited = ok(server.post("/v1/limiters/wait/acquire", "{\"maxWait\":\"3s\"," + limit + "}"));
    assertThat(waited.get("allowed").asBoolean()).isTrue();
    assertThat((System.nanoTime() - t0) / 1_000_000).as("waited for the refill").isGreaterThan(500);
    status(400, server.post("/v1/limiters/wait/acquire", "{\"maxWait\":\"1h\"," + limit + "}"));
  }

  @Test
  void peekRefundResetAndReconfigure() {
    String limit = "\"limit\":{\"tokenBucket\":\"10/1h\"}";
    ok(server.post("/v1/limiters/ops/try", "{\"permits\":4," + limit + "}"));
    JsonNode peek = ok(server.post("/v1/limiters/ops/peek", "{" + limit + "}"));
    assertThat(peek.get("remaining").asLong()).isEqualTo(6);
    assertThat(peek.get("permits").asLong()).isZero();
    assertThat(ok(server.post("/v1/limiters/ops/refund", "{\"permits\":3," + limit + "}")).get("remaining").asLong())
        .isEqualTo(9);
    assertThat(ok(server.post("/v1/limiters/ops/reset", "{" + limit + "}")).get("remaining").asLong())
        .isEqualTo(10);
    ok(server.post("/v1/limiters/ops/try", "{\"permits\":1," + limit + "}"));
    JsonNode re = ok(server.post("/v1/limiters/ops/reconfigure", "{\"limit\":{\"tokenBucket\":\"20/1h\"}}"));
    assertThat(re.get("limit").asLong()).isEqualTo(20);
    assertThat(re.get("remaining").asLong()).as("keeps what was consumed").isEqualTo(19);
    HttpResponse<String> stale = server.post("/v1/limiters/ops/peek", "{" + limit + "}");
    assertThat(ok(stale).get("limit").asLong()).as("handles adopt the stored limits").isEqualTo(20);
    // ...and say so: the limits sent (10/1h) are not the ones that decided
    assertThat(stale.headers().firstValue("Tally-Limits")).hasValue("stored-differ");
    assertThat(json(stale).get("storedLimits").asText()).startsWith("differ");
    HttpResponse<String> current = server.post("/v1/limiters/ops/peek",
        "{\"limit\":{\"tokenBucket\":\"20/1h\"}}");
    assertThat(current.headers().firstValue("Tally-Limits")).isEmpty();
    assertThat(json(current).has("storedLimits")).isFalse();
  }

  @Test
  void aQuotaCanBeToppedUp() {
    String limit = "\"limit\":{\"quota\":\"2/month@Europe/Paris\"}";
    ok(server.post("/v1/limiters/q:7/try", "{\"permits\":2," + limit + "}"));
    status(429, server.post("/v1/limiters/q:7/try", "{" + limit + "}"));
    assertThat(ok(server.post("/v1/limiters/q:7/top-up", "{\"units\":5," + limit + "}")).get("toppedUp").asLong())
        .isEqualTo(5);
    assertThat(ok(server.post("/v1/limiters/q:7/try", "{" + limit + "}")).get("allowed").asBoolean()).isTrue();
    status(400, server.post("/v1/limiters/q:7/top-up", "{\"units\":5,\"limit\":{\"tokenBucket\":\"1/1s\"}}"));
  }

  @Test
  void limitErrorsSayWhatToWrite() {
    assertThat(status(400, server.post("/v1/limiters/x/try", "{}")).get("message").asText())
        .contains("missing 'limit'");
    assertThat(status(400, server.post("/v1/limiters/x/try", "{\"limit\":{\"tokenBucket\":\"100/1x\"}}"))
        .get("message").asText()).contains("like 100/1m");
    assertThat(status(400, server.post("/v1/limiters/x/try", "{\"limit\":{\"tokenBuckt\":\"100/1m\"}}"))
        .get("message").asText()).contains("tokenBucket");
    assertThat(status(400, server.post("/v1/limiters/x/try", "{\"limit\":{\"gcra\":\"30/60s\"}}"))
        .get("message").asText()).contains("BURST:COUNT/PERIOD");
    status(404, server.post("/v1/limiters/x/frob", "{}"));
  }

  // ------------------------------------------------------------------ operations

  @Test
  void pingHealthzAndMetrics() {
    assertThat(ok(server.get("/ping")).toString()).isEqualTo("{\"pong\":true}");
    JsonNode health = ok(server.get("/healthz"));
    assertThat(health.get("status").asText()).isEqualTo("ok");
    assertThat(health.get("store").asText()).isEqualTo("mem");

    ok(server.post("/v1/counters/metered/incr", null));
    String oneAnHour = "{\"limit\":{\"tokenBucket\":\"1/1h\"}}";
    ok(server.post("/v1/limiters/metered-limiter/try", oneAnHour));
    status(429, server.post("/v1/limiters/metered-limiter/try", oneAnHour));
    status(400, server.post("/v1/counters/metered/incr", "{\"delta\":\"x\"}"));
    // A request's timer stops after its answer is written, so the client can see the answer
    // before the server has counted it: scrape until the 400 shows up (or a few seconds pass).
    HttpResponse<String> m = server.get("/metrics");
    for (int tries = 0; tries < 50 && !m.body().contains("status=\"400\",uri=\"/v1/counters/{key}/incr\""); tries++) {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      m = server.get("/metrics");
    }
    assertThat(m.statusCode()).isEqualTo(200);
    assertThat(m.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/plain");
    assertThat(m.body())
        .containsPattern("tally_operations_seconds_count\\{operation=\"incr\",outcome=\"ok\",store=\"mem\"\\} \\d+")
        .containsPattern("tally_operations_seconds_count\\{operation=\"limiter.try\",outcome=\"denied\",store=\"mem\"\\}")
        .containsPattern("http_server_requests_seconds_count\\{method=\"POST\",status=\"400\",uri=\"/v1/counters/\\{key\\}/incr\"\\}")
        .contains("tally_http_inflight")
        .contains("jvm_memory_used_bytes");
  }

  @Test
  void everyRouteInTheOpenApiFileIsServed() throws Exception {
    java.nio.file.Path spec = java.nio.file.Path.of(System.getProperty("tally.launcher", "../tally"))
        .resolveSibling("docs").resolve("openapi.yaml");
    String path = null;
    int checked = 0;
    for (String line : java.nio.file.Files.readAllLines(spec)) {
      var p = java.util.regex.Pattern.compile("^  (/\\S*):$").matcher(line);
      var m = java.util.regex.Pattern.compile("^    (get|put|post|delete):$").matcher(line);
      if (p.matches()) {
        path = p.group(1).replace("{key}", "doc:check").replace("{name}", "doc:check")
            .replace("{domain}", "doc:check").replace("{id}", "1.a");
      } else if (m.matches() && path != null) {
        HttpResponse<String> r = server.send(m.group(1).toUpperCase(java.util.Locale.ROOT), path,
            m.group(1).equals("get") || m.group(1).equals("delete") ? null : "{}");
        assertThat(r.statusCode()).as(m.group(1) + " " + path).isNotIn(405, 500);
        assertThat(r.body()).as(m.group(1) + " " + path).doesNotContain("no route");
        checked++;
      }
    }
    assertThat(checked).isEqualTo(31);
  }

  @Test
  void wrongMethodsAndUnknownRoutesAreJsonErrors() {
    HttpResponse<String> r = server.send("DELETE", "/v1/counters/x/incr", null);
    assertThat(status(405, r).get("error").asText()).isEqualTo("method_not_allowed");
    assertThat(r.headers().firstValue("Allow")).hasValue("POST, OPTIONS");
    // not_found means a missing counter: a client must not take a wrong URL for one
    assertThat(status(404, server.get("/v2/nothing")).get("error").asText()).isEqualTo("no_route");
    assertThat(status(404, server.post("/v1/counters/x/frobnicate", null)).get("error").asText())
        .isEqualTo("no_route");
    assertThat(status(404, server.post("/v1/limiters/x/frobnicate", null)).get("error").asText())
        .isEqualTo("no_route");
    status(405, server.post("/ping", null));
  }

  @Test
  void queryParametersAreCheckedAndInt64CanBeStrings() {
    JsonNode e = status(400, server.post("/v1/counters/q/incr?delta=5", null));
    assertThat(e.get("detail").asText()).contains("unknown query parameter 'delta'");
    assertThat(server.get("/v1/counters/q").statusCode()).as("nothing applied").isEqualTo(404);
    assertThat(status(400, server.get("/v1/counters?prefix=a&sort=up")).get("detail").asText())
        .contains("'sort'").as("a GET has no body to move it to").doesNotContain("JSON body");
    JsonNode big = ok(server.send("PUT", "/v1/counters/q?int64=string",
        "{\"value\":9007199254740993}"));
    assertThat(big.get("value").isTextual()).isTrue();
    assertThat(big.get("value").asText()).isEqualTo("9007199254740993");
    assertThat(ok(server.get("/v1/counters/q")).get("value").isIntegralNumber()).isTrue();
    JsonNode d = status(429, server.post("/v1/limiters/q-strings/try?int64=string",
        "{\"permits\":5,\"limit\":{\"tokenBucket\":\"1/1s\"}}"));
    assertThat(d.get("limit").asText()).isEqualTo("1");
    assertThat(d.get("status").isInt()).as("a problem's status stays a number").isTrue();
    assertThat(status(400, server.get("/v1/counters/q?int64=bigint")).get("detail").asText())
        .contains("int64 must be 'string'");
  }

  @Test
  void metricsHaveLatencyHistogramsPerRouteAndDecisionsPerPolicy() {
    server.post("/v1/limiters/m-policy/try",
        "{\"limits\":[{\"tokenBucket\":\"1/1m\",\"policy\":\"burst\"}]}");
    server.post("/v1/limiters/m-policy/try",
        "{\"limits\":[{\"tokenBucket\":\"1/1m\",\"policy\":\"burst\"}]}");
    String m = server.get("/metrics").body();
    assertThat(m).containsPattern("http_server_requests_seconds_bucket\\{method=\"POST\",status=\"429\","
        + "uri=\"/v1/limiters/\\{name\\}/try\",le=\"[0-9.]+\"\\} [1-9][0-9]*");
    assertThat(m).containsPattern("tally_decisions_total\\{outcome=\"allowed\",policy=\"burst\"\\} 1\\.0");
    assertThat(m).containsPattern("tally_decisions_total\\{outcome=\"denied\",policy=\"burst\"\\} 1\\.0");
  }

  @Test
  void theAccessLogIsOffByDefaultAndOneLinePerRequestWhenOn() throws Exception {
    assertThat(server.stderr()).doesNotContain("\"GET /ping");
    try (ServerProcess logged = ServerProcess.start("--store", "mem:", "--access-log")) {
      logged.get("/ping");
      logged.post("/v1/counters/logged/incr", null);
      String err = "";
      for (int i = 0; i < 50 && !err.contains("/v1/counters/logged/incr"); i++) {
        Thread.sleep(100); // the log is written after the answer
        err = logged.stderr();
      }
      assertThat(err).contains("127.0.0.1 \"GET /ping HTTP/1.1\" 200 13 ")
          .contains("\"POST /v1/counters/logged/incr HTTP/1.1\" 200 ");
    }
  }
}
