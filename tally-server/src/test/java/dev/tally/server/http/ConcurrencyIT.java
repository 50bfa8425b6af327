package dev.tally.server.http;

import static dev.tally.server.http.Responses.json;
import static dev.tally.server.http.Responses.ok;
import static dev.tally.server.http.Responses.status;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The concurrency routes against a real server process on the memory store. */
class ConcurrencyIT {
  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:");

  static JsonNode acquire(String name, String body) {
    return ok(server.post("/v1/concurrency/" + name + "/acquire", body));
  }

  static long inUse(String name) {
    return ok(server.get("/v1/concurrency/" + name + "?maxPermits=3")).get("inUse").asLong();
  }

  @Test
  void leasesUpToTheMaxThenRefusedUntilOneIsReleased() {
    JsonNode a = acquire("c:max", "{\"maxPermits\":3,\"weight\":2,\"ttl\":\"1m\"}");
    assertThat(a.get("name").asText()).isEqualTo("c:max");
    assertThat(a.get("weight").asLong()).isEqualTo(2);
    assertThat(a.get("expiresInMillis").asLong()).isBetween(1L, 60_000L);
    assertThat(Instant.parse(a.get("expiresAt").asText())).isAfter(Instant.now());
    JsonNode b = acquire("c:max", "{\"maxPermits\":3,\"ttl\":\"1m\"}");
    assertThat(b.get("fencingToken").asLong()).isGreaterThan(a.get("fencingToken").asLong());
    assertThat(inUse("c:max")).isEqualTo(3);

    JsonNode refused = status(429, server.post("/v1/concurrency/c:max/acquire",
        "{\"maxPermits\":3,\"ttl\":\"1m\"}"));
    assertThat(refused.get("error").asText()).isEqualTo("denied");
    assertThat(refused.get("detail").asText()).contains("has not 1 of its 3 permits free now");

    String release = "/v1/concurrency/c:max/leases/" + a.get("id").asText() + "/release";
    assertThat(ok(server.post(release, "{\"maxPermits\":3}")).get("released").asBoolean()).isTrue();
    assertThat(inUse("c:max")).isEqualTo(1);
    // releasing twice is harmless, and says the lease was not held any more
    assertThat(ok(server.post(release, "{\"maxPermits\":3}")).get("released").asBoolean()).isFalse();
    assertThat(inUse("c:max")).isEqualTo(1);
    JsonNode c = acquire("c:max", "{\"maxPermits\":3,\"weight\":2,\"ttl\":\"1m\"}");
    assertThat(c.get("fencingToken").asLong()).isGreaterThan(b.get("fencingToken").asLong());
  }

  @Test
  void aWaitingAcquireGetsThePermitAReleaseFrees() throws Exception {
    JsonNode held = acquire("c:wait", "{\"maxPermits\":1,\"ttl\":\"1m\"}");
    CompletableFuture<HttpResponse<String>> waiting = CompletableFuture.supplyAsync(() ->
        server.post("/v1/concurrency/c:wait/acquire", "{\"maxPermits\":1,\"ttl\":\"1m\",\"maxWait\":\"10s\"}"));
    // the server is still serving while the acquire waits: the wait holds no event loop
    assertThat(ok(server.get("/v1/concurrency/c:wait?maxPermits=1")).get("inUse").asLong()).isEqualTo(1);
    ok(server.post("/v1/concurrency/c:wait/leases/" + held.get("id").asText() + "/release", "{\"maxPermits\":1}"));
    JsonNode got = ok(waiting.get());
    assertThat(got.get("fencingToken").asLong()).isGreaterThan(held.get("fencingToken").asLong());
  }

  @Test
  void renewExtendsAHeldLeaseAndRefusesAnExpiredOne() throws Exception {
    JsonNode lease = acquire("c:renew", "{\"maxPermits\":1,\"ttl\":\"1m\"}");
    String renew = "/v1/concurrency/c:renew/leases/" + lease.get("id").asText() + "/renew";
    JsonNode renewed = ok(server.post(renew, "{\"maxPermits\":1,\"ttl\":\"1h\"}"));
    assertThat(renewed.get("id").asText()).isEqualTo(lease.get("id").asText());
    assertThat(renewed.get("expiresInMillis").asLong()).isGreaterThan(60_000L);

    JsonNode brief = acquire("c:expire", "{\"maxPermits\":1,\"ttl\":\"200ms\"}");
    // The server's memory store reads the system clock, and a server process takes no other:
    // a real wait, well past the 200 ms ttl, for the lease to expire.
    Thread.sleep(1_000);
    assertThat(ok(server.get("/v1/concurrency/c:expire?maxPermits=1")).get("inUse").asLong()).isZero();
    JsonNode gone = status(410, server.post("/v1/concurrency/c:expire/leases/" + brief.get("id").asText()
        + "/renew", "{\"maxPermits\":1,\"ttl\":\"1m\"}"));
    assertThat(gone.get("error").asText()).isEqualTo("lease_gone");
    assertThat(gone.get("detail").asText()).contains("was released or has expired");
    assertThat(ok(server.get("/v1/concurrency/c:expire?maxPermits=1")).get("inUse").asLong()).isZero();

    ok(server.post(renew.replace("/renew", "/release"), "{\"maxPermits\":1}"));
    status(410, server.post(renew, "{\"maxPermits\":1,\"ttl\":\"1m\"}"));
  }

  @Test
  void badInputIsAClearBadRequestAndTakesNothing() {
    String url = "/v1/concurrency/c:bad/acquire";
    assertThat(message(400, url, "{\"maxPermits\":3,\"weight\":-1,\"ttl\":\"1m\"}"))
        .contains("weight must be 1 to maxPermits (3), not -1");
    assertThat(message(400, url, "{\"ttl\":\"1m\"}")).contains("missing field 'maxPermits'");
    assertThat(message(400, url, "{\"maxPermits\":3,\"weight\":4,\"ttl\":\"1m\"}"))
        .contains("weight must be 1 to maxPermits (3), not 4");
    assertThat(message(400, url, "{\"maxPermits\":3,\"ttl\":\"soon\"}")).contains("'ttl'");
    assertThat(message(400, url, "{\"maxPermits\":3}")).contains("a lease needs a ttl");
    assertThat(message(400, url, "{\"maxPermits\":0,\"ttl\":\"1m\"}")).contains("maxPermits must be 1 or more");
    assertThat(message(400, url, "{\"maxPermits\":3,\"ttl\":\"1m\",\"maxWait\":\"1h\"}"))
        .contains("maxWait 1h is longer than the 5m allowed");
    assertThat(message(400, url, "{\"maxPermits\":3,\"ttl\":\"1m\",\"permits\":1}")).contains("unknown field 'permits'");
    assertThat(inUse("c:bad")).isZero();

    assertThat(message(400, "/v1/concurrency/c:bad/leases/nonsense/renew", "{\"maxPermits\":3,\"ttl\":\"1m\"}"))
        .contains("is not a lease id");
    assertThat(message(400, "/v1/concurrency/c:bad/leases/1.a/release", "{}")).contains("missing field 'maxPermits'");
    assertThat(json(server.get("/v1/concurrency/c:bad")).get("detail").asText())
        .contains("missing query parameter maxPermits");
    status(400, server.get("/v1/concurrency/c:bad?maxPermits=x"));
    status(404, server.post("/v1/concurrency/c:bad/leases/1.a/settle", "{\"maxPermits\":3}"));
    // a retried acquire would take a second lease: the key is refused rather than ignored
    HttpResponse<String> keyed = server.send("POST", url, "{\"maxPermits\":3,\"ttl\":\"1m\"}",
        "Idempotency-Key", "k1");
    assertThat(status(400, keyed).get("detail").asText()).contains("take no operation id (Idempotency-Key");
    assertThat(inUse("c:bad")).isZero();
  }

  private static String message(int expected, String path, String body) {
    return status(expected, server.post(path, body)).get("detail").asText();
  }
}
