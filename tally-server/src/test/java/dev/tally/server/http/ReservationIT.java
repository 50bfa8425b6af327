package dev.tally.server.http;

import static dev.tally.server.http.Responses.ok;
import static dev.tally.server.http.Responses.status;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The reservation routes against a real server process on the memory store. A limit refilled
 * once in ten years (a permit every 9 hours) does not move during the test, so what is left shows
 * every charge exactly.
 */
class ReservationIT {
  private static final String LIMIT = "\"limit\": {\"tokenBucket\": \"1000/3650d\"}";

  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:");

  static JsonNode reserve(String name, long estimate, String... headers) {
    return ok(server.send("POST", "/v1/limiters/" + name + "/reserve",
        "{\"estimate\": " + estimate + ", \"ttl\": \"5m\", " + LIMIT + "}", headers));
  }

  static String settlePath(String name, JsonNode reservation) {
    return "/v1/limiters/" + name + "/reservations/" + reservation.get("reservation").asText() + "/settle";
  }

  static long remaining(String name) {
    return ok(server.post("/v1/limiters/" + name + "/peek", "{" + LIMIT + "}")).get("remaining").asLong();
  }

  @Test
  void aSettlementBelowTheEstimateGivesTheSurplusBack() {
    JsonNode r = reserve("r:below", 300);
    assertThat(r.get("allowed").asBoolean()).isTrue();
    assertThat(r.get("permits").asLong()).isEqualTo(300);
    assertThat(r.get("remaining").asLong()).isEqualTo(700);
    assertThat(remaining("r:below")).isEqualTo(700);

    JsonNode settled = ok(server.post(settlePath("r:below", r), "{\"actual\": 120, " + LIMIT + "}"));
    assertThat(settled.get("settled").asLong()).isEqualTo(120);
    assertThat(settled.get("reservation").asText()).isEqualTo(r.get("reservation").asText());
    assertThat(settled.get("remaining").asLong()).isEqualTo(880);
    assertThat(remaining("r:below")).isEqualTo(880);
  }

  @Test
  void aSettlementAboveTheEstimateChargesTheExcessIntoDebt() {
    JsonNode r = reserve("r:above", 900);
    JsonNode settled = ok(server.post(settlePath("r:above", r), "{\"actual\": 1500, " + LIMIT + "}"));
    assertThat(settled.get("allowed").asBoolean()).isTrue();
    assertThat(remaining("r:above")).isZero(); // 500 below empty: what is left reads 0
    JsonNode refused = status(429, server.post("/v1/limiters/r:above/try", "{\"permits\": 1, " + LIMIT + "}"));
    // one permit waits for the 500 of debt to be repaid as well: 501 of 1000 in 3650 days
    long perPermit = 3650L * 86_400_000 / 1000;
    assertThat(refused.get("retryAfterMillis").asLong()).isBetween(500 * perPermit, 501 * perPermit);
  }

  @Test
  void aCancelledReservationGivesEverythingBackAndIsThenGone() {
    JsonNode r = reserve("r:cancel", 400);
    String cancel = "/v1/limiters/r:cancel/reservations/" + r.get("reservation").asText() + "/cancel";
    assertThat(ok(server.post(cancel, "{" + LIMIT + "}")).get("settled").asLong()).isZero();
    assertThat(remaining("r:cancel")).isEqualTo(1000);

    JsonNode gone = status(410, server.post(settlePath("r:cancel", r), "{\"actual\": 5, " + LIMIT + "}"));
    assertThat(gone.get("error").asText()).isEqualTo("reservation_gone");
    assertThat(remaining("r:cancel")).isEqualTo(1000);
  }

  @Test
  void theSameSettlementRepeatedAppliesOnceAndAnotherAmountIsRefused() {
    JsonNode r = reserve("r:twice", 200);
    String settle = settlePath("r:twice", r);
    JsonNode first = ok(server.post(settle, "{\"actual\": 50, " + LIMIT + "}"));
    JsonNode again = ok(server.post(settle, "{\"actual\": 50, " + LIMIT + "}"));
    assertThat(again.get("remaining").asLong()).isEqualTo(first.get("remaining").asLong());
    assertThat(remaining("r:twice")).isEqualTo(950);

    status(410, server.post(settle, "{\"actual\": 60, " + LIMIT + "}"));
    assertThat(remaining("r:twice")).isEqualTo(950);
  }

  @Test
  void aRefusedReservationHoldsNothingAndNamesNoReservation() {
    reserve("r:refused", 900);
    JsonNode refused = status(429, server.post("/v1/limiters/r:refused/reserve",
        "{\"estimate\": 200, \"ttl\": \"5m\", " + LIMIT + "}"));
    assertThat(refused.get("error").asText()).isEqualTo("denied");
    assertThat(refused.has("reservation")).isFalse();
    assertThat(remaining("r:refused")).isEqualTo(100);
  }

  @Test
  void anIdempotencyKeyNamesTheReservationAndARetriedReserveTakesOnce() {
    JsonNode first = reserve("r:key", 100, "Idempotency-Key", "job-7:call-1");
    JsonNode retried = reserve("r:key", 100, "Idempotency-Key", "job-7:call-1");
    assertThat(first.get("reservation").asText()).isEqualTo("job-7:call-1");
    assertThat(retried.get("reservation").asText()).isEqualTo("job-7:call-1");
    assertThat(remaining("r:key")).isEqualTo(900);
    ok(server.post("/v1/limiters/r:key/reservations/job-7:call-1/settle", "{\"actual\": 30, " + LIMIT + "}"));
    assertThat(remaining("r:key")).isEqualTo(970);
  }

  @Test
  void badInputIsAClearErrorAndChangesNothing() {
    assertThat(status(400, server.post("/v1/limiters/r:bad/reserve", "{\"ttl\": \"5m\", " + LIMIT + "}"))
        .get("detail").asText()).contains("missing field 'estimate'");
    assertThat(status(400, server.post("/v1/limiters/r:bad/reserve", "{\"estimate\": 5, " + LIMIT + "}"))
        .get("detail").asText()).contains("needs a ttl");
    assertThat(status(400, server.post("/v1/limiters/r:bad/reserve",
        "{\"estimate\": 0, \"ttl\": \"5m\", " + LIMIT + "}")).get("detail").asText()).contains("estimate");
    JsonNode r = reserve("r:bad", 10);
    assertThat(status(400, server.post(settlePath("r:bad", r), "{\"actual\": -1, " + LIMIT + "}"))
        .get("detail").asText()).contains("actual must be zero or more");
    assertThat(status(400, server.post(settlePath("r:bad", r), "{" + LIMIT + "}"))
        .get("detail").asText()).contains("missing field 'actual'");
    assertThat(status(400, server.post("/v1/limiters/r:bad/reservations/a%20b/settle",
        "{\"actual\": 1, " + LIMIT + "}")).get("detail").asText()).contains("reservation id");
    assertThat(status(404, server.post("/v1/limiters/r:bad/reservations/x/close", "{" + LIMIT + "}"))
        .get("error").asText()).isEqualTo("no_route");
    assertThat(remaining("r:bad")).isEqualTo(990);
  }

  /** Threads reserving, settling above and below, cancelling: what is charged is what was settled. */
  @Test
  void concurrentReservationsChargeExactlyTheSettledCosts() throws Exception {
    String limit = "\"limit\": {\"tokenBucket\": \"1000000/3650d\"}";
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Future<Long>> charged = new ArrayList<>();
      for (int t = 0; t < 16; t++) {
        charged.add(pool.submit(() -> {
          long sum = 0;
          for (int i = 0; i < 25; i++) {
            long estimate = 1 + ThreadLocalRandom.current().nextLong(100);
            JsonNode r = ok(server.post("/v1/limiters/r:many/reserve",
                "{\"estimate\": " + estimate + ", \"ttl\": \"5m\", " + limit + "}"));
            long actual = ThreadLocalRandom.current().nextLong(200);
            ok(server.post(settlePath("r:many", r), "{\"actual\": " + actual + ", " + limit + "}"));
            sum += actual;
          }
          return sum;
        }));
      }
      long total = 0;
      for (Future<Long> f : charged) {
        total += f.get();
      }
      long left = ok(server.post("/v1/limiters/r:many/peek", "{" + limit + "}")).get("remaining").asLong();
      assertThat(1_000_000 - left).isEqualTo(total);
    } finally {
      pool.shutdownNow();
    }
  }
}
