package dev.tally.server.http;

import static dev.tally.server.http.Responses.json;
import static dev.tally.server.http.Responses.ok;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two server processes on one {@code file:} store share every count exactly: the embedded store
 * is the point of the default, and the HTTP layer must not lose or double a single increment.
 */
class SharedFileStoreIT {
  static final int CONCURRENCY = 8;

  @TempDir
  static Path dir;
  static ServerProcess a;
  static ServerProcess b;

  @BeforeAll
  static void start() throws Exception {
    String store = "file:" + dir.resolve("tally-data");
    a = ServerProcess.start("--store", store);
    b = ServerProcess.start("--store", store);
  }

  @AfterAll
  static void stop() throws Exception {
    a.close();
    b.close();
  }

  /** Sends {@code n} requests with at most {@link #CONCURRENCY} in flight; returns the bodies. */
  static List<HttpResponse<String>> send(ServerProcess s, int n, String path, String body) {
    Semaphore inFlight = new Semaphore(CONCURRENCY);
    List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      inFlight.acquireUninterruptibly();
      all.add(ServerProcess.HTTP.sendAsync(HttpRequest.newBuilder(s.loopback(path))
              .timeout(Duration.ofSeconds(30))
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
          HttpResponse.BodyHandlers.ofString())
          .whenComplete((r, e) -> inFlight.release()));
    }
    return all.stream().map(CompletableFuture::join).toList();
  }

  @Test
  void incrementsThroughTwoServersAddUpExactly() throws Exception {
    CompletableFuture<List<HttpResponse<String>>> viaA =
        CompletableFuture.supplyAsync(() -> send(a, 1500, "/v1/counters/shared/incr", ""));
    List<HttpResponse<String>> viaB = send(b, 1500, "/v1/counters/shared/incr", "{\"delta\":2}");
    assertThat(viaA.get()).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(200));
    assertThat(viaB).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(200));
    assertThat(ok(a.get("/v1/counters/shared")).get("value").asLong()).isEqualTo(1500 + 3000);
    assertThat(ok(b.get("/v1/counters/shared")).get("value").asLong()).isEqualTo(4500);
    // every answer was a distinct value: no increment was lost or applied twice
    assertThat(viaA.get().stream().map(r -> json(r).get("value").asLong()).distinct().count()).isEqualTo(1500);
    assertThat(Files.exists(dir.resolve("tally-data").resolve("store.tally"))).isTrue();
  }

  @Test
  void popOnOneServerNeverLosesAnIncrementMadeOnTheOther() throws Exception {
    CompletableFuture<List<HttpResponse<String>>> incrs =
        CompletableFuture.supplyAsync(() -> send(a, 2000, "/v1/counters/flush/incr", ""));
    AtomicLong popped = new AtomicLong();
    while (!incrs.isDone()) {
      HttpResponse<String> r = b.post("/v1/counters/flush/pop", null);
      if (r.statusCode() == 200) {
        popped.addAndGet(json(r).get("value").asLong());
      } else {
        assertThat(r.statusCode()).isEqualTo(404);
      }
    }
    assertThat(incrs.get()).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(200));
    HttpResponse<String> rest = b.get("/v1/counters/flush");
    long remaining = rest.statusCode() == 404 ? 0 : json(rest).get("value").asLong();
    assertThat(popped.get() + remaining).isEqualTo(2000);
  }

  @Test
  void aTransactionOnOneServerIsSeenWholeByTheOther() {
    ok(a.post("/v1/transactions", "{\"ops\":[{\"op\":\"put\",\"key\":\"tx:x\",\"value\":1},"
        + "{\"op\":\"put\",\"key\":\"tx:y\",\"value\":1}]}"));
    assertThat(ok(b.get("/v1/counters?prefix=tx:")).get("keys")).hasSize(2);
  }

  @Test
  void aLimiterIsSharedByBothServers() {
    String body = "{\"limit\":{\"tokenBucket\":\"100/1h\"}}";
    HttpResponse<String> probe = a.post("/v1/limiters/probe/peek", body);
    assumeThat(probe.statusCode()).as("the file store has rate limiters: " + probe.body()).isEqualTo(200);
    CompletableFuture<List<HttpResponse<String>>> viaA =
        CompletableFuture.supplyAsync(() -> send(a, 80, "/v1/limiters/limiter:shared/try", body));
    List<HttpResponse<String>> viaB = send(b, 80, "/v1/limiters/limiter:shared/try", body);
    long allowed = viaA.join().stream().filter(r -> r.statusCode() == 200).count()
        + viaB.stream().filter(r -> r.statusCode() == 200).count();
    assertThat(allowed).isEqualTo(100);
  }

  /**
   * Two servers whose callers hold different versions of one limiter's limits (a rolling deploy
   * that changes a limit): the newer version replaces the stored limits on the key that exists,
   * keeping what was consumed, and the older caller then adopts them; each answer says which, and
   * from what version. The 429 problem says it too.
   */
  @Test
  void theNewerVersionOfALimitWinsOnAnExistingKeyKeepingWhatWasConsumed() {
    String old = "\"limit\":{\"tokenBucket\":\"10/1h\"},\"version\":1";
    String newer = "\"limit\":{\"tokenBucket\":\"20/1h\"},\"version\":2";
    JsonNode first = ok(a.post("/v1/limiters/deploy/try", "{\"permits\":4," + old + "}"));
    assertThat(first.get("remaining").asLong()).isEqualTo(6);
    assertThat(first.has("limitsMismatch")).as("a new key stores the caller's limits").isFalse();

    JsonNode upgraded = ok(b.post("/v1/limiters/deploy/try", "{" + newer + "}"));
    assertThat(upgraded.get("limit").asLong()).isEqualTo(20);
    assertThat(upgraded.get("remaining").asLong()).as("20 less the 4 + 1 taken").isEqualTo(15);
    assertThat(upgraded.get("limitsMismatch").asText()).isEqualTo("upgraded");
    assertThat(upgraded.get("storedVersion").asLong()).isEqualTo(1);
    assertThat(upgraded.has("storedLimits")).isFalse();
    assertThat(b.get("/metrics").body()).as("counted")
        .containsPattern("tally_limiter_version_mismatch_total\\{[^}]*outcome=\"upgraded\"[^}]*\\} 1\\.0");

    HttpResponse<String> adopted = a.post("/v1/limiters/deploy/try", "{" + old + "}");
    JsonNode body = ok(adopted);
    assertThat(body.get("limit").asLong()).as("the older caller adopts the newer limits").isEqualTo(20);
    assertThat(body.get("remaining").asLong()).isEqualTo(14);
    assertThat(body.get("limitsMismatch").asText()).isEqualTo("adopted");
    assertThat(body.get("storedVersion").asLong()).isEqualTo(2);
    assertThat(adopted.headers().firstValue("Tally-Limits")).hasValue("stored-differ");

    JsonNode agreed = ok(b.post("/v1/limiters/deploy/peek", "{" + newer + "}"));
    assertThat(agreed.get("remaining").asLong()).isEqualTo(14);
    assertThat(agreed.has("limitsMismatch")).isFalse();

    HttpResponse<String> denied = a.post("/v1/limiters/deploy/try", "{\"permits\":15," + old + "}");
    assertThat(denied.statusCode()).as(denied.body()).isEqualTo(429);
    assertThat(json(denied).get("limitsMismatch").asText()).isEqualTo("adopted");
    assertThat(json(denied).get("storedVersion").asLong()).isEqualTo(2);

    HttpResponse<String> bad = a.post("/v1/limiters/deploy/try",
        "{\"limit\":{\"tokenBucket\":\"10/1h\"},\"version\":-1}");
    assertThat(bad.statusCode()).as(bad.body()).isEqualTo(400);
    assertThat(json(bad).get("detail").asText()).contains("version must be from 0 to");
  }
}

