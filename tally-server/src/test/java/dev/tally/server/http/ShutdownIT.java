package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** SIGTERM lets the requests in flight finish before the process exits. */
class ShutdownIT {
  /**
   * Empties a token bucket of one unit, then sends an acquire that waits for it to refill, and
   * gives the server half a second to start waiting.
   */
  private static CompletableFuture<HttpResponse<String>> acquireAfterEmptying(ServerProcess server,
      String bucket, String maxWait) throws InterruptedException {
    String limit = "\"limit\":{\"tokenBucket\":\"" + bucket + "\"}";
    assertThat(server.post("/v1/limiters/b/try", "{" + limit + "}").statusCode()).isEqualTo(200);
    CompletableFuture<HttpResponse<String>> waiting = ServerProcess.HTTP.sendAsync(
        HttpRequest.newBuilder(server.loopback("/v1/limiters/b/acquire"))
            .timeout(Duration.ofSeconds(20))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"maxWait\":\"" + maxWait + "\"," + limit + "}"))
            .build(),
        HttpResponse.BodyHandlers.ofString());
    Thread.sleep(500);
    return waiting;
  }

  @Test
  void sigtermCompletesARequestInFlight() throws Exception {
    ServerProcess server = ServerProcess.start("--store", "mem:", "--shutdown-grace", "10s");
    try {
      // this acquire waits about two seconds for the bucket to refill
      CompletableFuture<HttpResponse<String>> waiting = acquireAfterEmptying(server, "1/2s", "5s");
      long t0 = System.nanoTime();
      server.process.destroy(); // SIGTERM
      HttpResponse<String> r = waiting.get(20, TimeUnit.SECONDS);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(new ObjectMapper().readTree(r.body()).get("allowed").asBoolean()).isTrue();
      assertThat(server.process.waitFor(20, TimeUnit.SECONDS)).isTrue();
      assertThat((System.nanoTime() - t0) / 1_000_000).as("waited for the acquire, not the whole grace")
          .isBetween(500L, 8_000L);
      assertThat(server.stderr()).as("exit " + server.process.exitValue()).contains("tally serve: stopped");
    } finally {
      server.close();
    }
  }

  @Test
  void anAcquireStillWaitingWhenTheGraceRunsOutIsAnswered503() throws Exception {
    ServerProcess server = ServerProcess.start("--store", "mem:", "--shutdown-grace", "1s");
    try {
      // this acquire would wait about twenty seconds for the bucket to refill
      CompletableFuture<HttpResponse<String>> waiting = acquireAfterEmptying(server, "1/20s", "30s");
      server.process.destroy(); // SIGTERM
      HttpResponse<String> r = waiting.get(20, TimeUnit.SECONDS);
      assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
      assertThat(new ObjectMapper().readTree(r.body()).get("error").asText()).isEqualTo("shutting_down");
      assertThat(server.process.waitFor(20, TimeUnit.SECONDS)).isTrue();
    } finally {
      server.close();
    }
  }
}
