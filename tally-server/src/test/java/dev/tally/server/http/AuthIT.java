package dev.tally.server.http;

import static dev.tally.server.http.Responses.status;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The token rule: a server listening beyond loopback must have a bearer token. Requests are only
 * ever sent to 127.0.0.1, even to a server bound to 0.0.0.0.
 */
class AuthIT {
  static final String TOKEN = "0123456789abcdef0123456789abcdef";

  private static Process run(Map<String, String> env, String... args) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(ServerProcess.command(args)).redirectErrorStream(true);
    pb.environment().remove("TALLY_TOKEN");
    pb.environment().putAll(env);
    return pb.start();
  }

  @Test
  void bindingBeyondLoopbackWithoutATokenFailsFast() throws Exception {
    Process p = run(Map.of(), "--store", "mem:", "--bind", "0.0.0.0");
    assertThat(p.waitFor(20, TimeUnit.SECONDS)).as("exits by itself").isTrue();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(output).isEqualTo(2);
    assertThat(output).doesNotContain("listening on")
        .contains("needs a bearer token: pass --token-file FILE or set TALLY_TOKEN");
  }

  @Test
  void aShortTokenIsRefused() throws Exception {
    Process p = run(Map.of("TALLY_TOKEN", "short"), "--store", "mem:", "--bind", "0.0.0.0");
    assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(output).isEqualTo(2);
    assertThat(output).contains("use at least 16");
  }

  @Test
  void withATokenEveryApiRequestMustCarryIt() throws Exception {
    try (ServerProcess server = ServerProcess.start(Map.of("TALLY_TOKEN", TOKEN),
        "--store", "mem:", "--bind", "0.0.0.0")) {
      var none = server.send("POST", "/v1/counters/k/incr", null);
      assertThat(status(401, none).get("error").asText()).isEqualTo("unauthorized");
      assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"tally\"");
      status(401, server.send("POST", "/v1/counters/k/incr", null, "Authorization", "Bearer wrong-token-0123456789"));
      status(401, server.send("POST", "/v1/counters/k/incr", null, "Authorization", "Bearer " + TOKEN + "x"));
      status(401, server.send("POST", "/v1/counters/k/incr", null, "Authorization", "Basic " + TOKEN));
      status(401, server.send("GET", "/metrics", null));
      // nothing was written by the refused requests
      status(404, server.send("GET", "/v1/counters/k", null, "Authorization", "Bearer " + TOKEN));
    }
  }

  @Test
  void theRightTokenIsAcceptedAndProbesNeedNone(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("token");
    Files.writeString(file, TOKEN + "\n");
    try (ServerProcess server = ServerProcess.start(Map.of(),
        "--store", "mem:", "--bind", "0.0.0.0", "--token-file", file.toString())) {
      String auth = "Bearer " + TOKEN;
      assertThat(Responses.ok(server.send("POST", "/v1/counters/k/incr", null, "Authorization", auth))
          .get("value").asLong()).isEqualTo(1);
      assertThat(Responses.ok(server.send("GET", "/v1/counters/k", null, "Authorization", auth))
          .get("value").asLong()).isEqualTo(1);
      assertThat(server.send("GET", "/metrics", null, "Authorization", auth).statusCode()).isEqualTo(200);
      Responses.ok(server.get("/ping"));
      Responses.ok(server.get("/healthz"));
      status(401, server.send("GET", "/v1/counters/k", null));
    }
  }
}
