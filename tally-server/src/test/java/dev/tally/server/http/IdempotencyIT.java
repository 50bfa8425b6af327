package dev.tally.server.http;

import static dev.tally.server.http.Responses.json;
import static dev.tally.server.http.Responses.ok;
import static dev.tally.server.http.Responses.status;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code Idempotency-Key} (draft-ietf-httpapi-idempotency-key-header-07) on every route that
 * changes something: a repeat answers what the first request answered and applies nothing; the
 * key on another request is 422; a malformed key, or a missing one where the server requires it,
 * is 400.
 */
class IdempotencyIT {
  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:");

  private static HttpResponse<String> keyed(String method, String path, String body, String key) {
    return server.send(method, path, body, "Idempotency-Key", "\"" + key + "\"");
  }

  @Test
  void aRepeatedIncrementAnswersTheFirstAnswerAndCountsOnce() {
    for (int i = 0; i < 3; i++) {
      assertThat(ok(keyed("POST", "/v1/counters/once/incr", "{\"delta\":5}", "incr-1"))
          .get("value").asLong()).isEqualTo(5);
    }
    assertThat(ok(keyed("POST", "/v1/counters/once/incr", "{\"delta\":5}", "incr-2"))
        .get("value").asLong()).as("a new key is a new operation").isEqualTo(10);
    assertThat(ok(server.get("/v1/counters/once")).get("value").asLong()).isEqualTo(10);
  }

  @Test
  void concurrentRetriesOfOneKeyApplyOnce() {
    List<CompletableFuture<HttpResponse<String>>> all = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      all.add(CompletableFuture.supplyAsync(() ->
          keyed("POST", "/v1/counters/raced/incr", "{\"delta\":3}", "raced-1")));
    }
    for (CompletableFuture<HttpResponse<String>> f : all) {
      assertThat(ok(f.join()).get("value").asLong()).isEqualTo(3);
    }
    assertThat(ok(server.get("/v1/counters/raced")).get("value").asLong()).isEqualTo(3);
  }

  @Test
  void theKeyOnAnotherRequestIs422AndAppliesNothing() {
    ok(keyed("POST", "/v1/counters/k422/incr", "{\"delta\":1}", "k422"));
    JsonNode e = status(422, keyed("POST", "/v1/counters/k422/incr", "{\"delta\":2}", "k422"));
    assertThat(e.get("error").asText()).isEqualTo("unprocessable");
    status(422, keyed("POST", "/v1/counters/other/incr", "{\"delta\":1}", "k422"));
    assertThat(ok(server.get("/v1/counters/k422")).get("value").asLong()).isEqualTo(1);
    assertThat(server.get("/v1/counters/other").statusCode()).isEqualTo(404);
  }

  @Test
  void malformedKeysAre400() {
    for (String bad : List.of("\"unterminated", "\"two\" \"keys\"", "\"\"", "\"has space\"",
        "\"" + "x".repeat(129) + "\"")) {
      HttpResponse<String> r = server.send("POST", "/v1/counters/bad-key/incr", null,
          "Idempotency-Key", bad);
      assertThat(r.statusCode()).as(bad).isEqualTo(400);
    }
    assertThat(server.get("/v1/counters/bad-key").statusCode()).isEqualTo(404);
  }

  @Test
  void everyMutatingRouteTakesAKey() {
    String limit = "{\"limit\":{\"tokenBucket\":\"10/1h\"}}";
    String tx = "{\"ops\":[{\"op\":\"incr\",\"key\":\"tx-a\"},{\"op\":\"incr\",\"key\":\"tx-b\"}]}";
    String[][] calls = {
        {"PUT", "/v1/counters/r-put", "{\"value\":7}"},
        {"POST", "/v1/counters/r-put/decr", "{\"delta\":2}"},
        {"POST", "/v1/counters/r-add/add", "{\"value\":3}"},
        {"POST", "/v1/transactions", tx},
        {"POST", "/v1/limiters/r-lim/try", "{\"permits\":2,\"limit\":{\"tokenBucket\":\"10/1h\"}}"},
        {"POST", "/v1/limiters/r-lim/refund", "{\"permits\":1,\"limit\":{\"tokenBucket\":\"10/1h\"}}"},
        {"POST", "/v1/limiters/r-lim/acquire", "{\"permits\":3,\"limit\":{\"tokenBucket\":\"10/1h\"}}"},
    };
    int n = 0;
    for (String[] c : calls) {
      String key = "route-" + n++;
      HttpResponse<String> first = keyed(c[0], c[1], c[2], key);
      HttpResponse<String> again = keyed(c[0], c[1], c[2], key);
      assertThat(again.statusCode()).as(c[1]).isEqualTo(first.statusCode());
      if (!c[1].endsWith("/refund")) { // refund answers the state after it, read afresh
        assertThat(again.body()).as(c[1]).isEqualTo(first.body());
      }
    }
    assertThat(ok(server.get("/v1/counters/r-put")).get("value").asLong()).isEqualTo(5);
    assertThat(ok(server.get("/v1/counters/tx-a")).get("value").asLong()).isEqualTo(1);
    // 10 - 2 + 1 - 3, each once
    assertThat(ok(server.post("/v1/limiters/r-lim/peek", limit)).get("remaining").asLong())
        .isEqualTo(6);
    // pop and delete: the repeat answers the first answer, not 404
    server.send("PUT", "/v1/counters/r-pop", "{\"value\":9}");
    assertThat(ok(keyed("POST", "/v1/counters/r-pop/pop", null, "pop-1")).get("value").asLong())
        .isEqualTo(9);
    assertThat(ok(keyed("POST", "/v1/counters/r-pop/pop", null, "pop-1")).get("value").asLong())
        .isEqualTo(9);
  }

  @Test
  void aServerThatRequiresKeysRefusesRequestsWithout() throws Exception {
    try (ServerProcess strict = ServerProcess.start("--store", "mem:",
        "--require-idempotency-key")) {
      JsonNode e = status(400, strict.post("/v1/counters/strict/incr", null));
      assertThat(e.get("detail").asText()).contains("requires an Idempotency-Key");
      assertThat(strict.get("/v1/counters/strict").statusCode()).isEqualTo(404);
      assertThat(json(strict.send("POST", "/v1/counters/strict/incr", null,
          "Idempotency-Key", "\"s-1\"")).get("value").asLong()).isEqualTo(1);
      assertThat(strict.get("/ping").statusCode()).as("reads need none").isEqualTo(200);
    }
  }
}
