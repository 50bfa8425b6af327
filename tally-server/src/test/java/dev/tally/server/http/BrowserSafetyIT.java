package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A server without a token cannot be driven by web pages: the two requests a page can make
 * (a cross-site form post, and a read through a name rebound to 127.0.0.1) answer 403 and
 * change nothing; mutating routes take only JSON; CORS answers only the allowlist. The requests
 * are sent as curl sends them, with {@code curl} itself where it matters.
 */
class BrowserSafetyIT {
  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:",
      "--cors-origin", "https://app.example.com", "--allow-host", "tally.internal");

  /** Runs curl against the server on localhost; returns status line and body. */
  static String curl(String... args) throws IOException, InterruptedException {
    List<String> cmd = new java.util.ArrayList<>(List.of("curl", "-s", "-i"));
    for (String a : args) {
      cmd.add(a.replace("PORT", Integer.toString(server.port())));
    }
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as("curl exit: " + out).isZero();
    return out;
  }

  @Test
  void aCrossSitePostIsRefusedAndAppliesNothing() throws Exception {
    String out = curl("-X", "POST", "localhost:PORT/v1/counters/csrf/incr",
        "-H", "Origin: http://attacker.example", "-H", "Content-Type: text/plain",
        "-d", "{\"delta\":1000}");
    assertThat(out).startsWith("HTTP/1.1 403 ").contains("application/problem+json")
        .contains("http://attacker.example");
    assertThat(server.get("/v1/counters/csrf").statusCode()).isEqualTo(404);
    // the same with JSON, and with only Sec-Fetch-Site saying where it came from
    assertThat(server.send("POST", "/v1/counters/csrf/incr", "{\"delta\":1000}",
        "Origin", "http://attacker.example").statusCode()).isEqualTo(403);
    assertThat(server.send("POST", "/v1/counters/csrf/incr", "{\"delta\":1000}",
        "Sec-Fetch-Site", "cross-site").statusCode()).isEqualTo(403);
    assertThat(server.send("POST", "/v1/counters/csrf/incr", "{\"delta\":1000}",
        "Origin", "null").statusCode()).as("a sandboxed frame").isEqualTo(403);
    assertThat(server.get("/v1/counters/csrf").statusCode()).isEqualTo(404);
  }

  @Test
  void aRequestThroughARebindingNameIsRefused() throws Exception {
    server.post("/v1/counters/secret/incr", null);
    String out = curl("localhost:PORT/v1/counters", "-H", "Host: rebind.attacker.example");
    assertThat(out).startsWith("HTTP/1.1 403 ").doesNotContain("secret");
    String write = curl("-X", "POST", "localhost:PORT/v1/counters/secret/incr",
        "-H", "Host: rebind.attacker.example");
    assertThat(write).startsWith("HTTP/1.1 403 ");
    assertThat(Responses.json(server.get("/v1/counters/secret")).get("value").asLong()).isEqualTo(1);
  }

  @Test
  void pagesOnThisMachineAndConfiguredNamesAreServed() throws Exception {
    assertThat(curl("localhost:PORT/v1/counters", "-H", "Host: tally.internal:8080"))
        .startsWith("HTTP/1.1 200 ");
    assertThat(curl("localhost:PORT/v1/counters", "-H", "Host: [::1]:8080"))
        .startsWith("HTTP/1.1 200 ");
    assertThat(server.send("POST", "/v1/counters/local/incr", "{}",
        "Origin", "http://localhost:3000", "Sec-Fetch-Site", "same-site").statusCode())
        .isEqualTo(200);
  }

  @Test
  void mutatingRoutesTakeOnlyJson() {
    HttpResponse<String> r = server.send("POST", "/v1/counters/typed/incr", "{\"delta\":5}",
        "Content-Type", "application/x-www-form-urlencoded");
    assertThat(Responses.status(415, r).get("error").asText()).isEqualTo("unsupported_media_type");
    assertThat(server.send("PUT", "/v1/counters/typed", "{\"value\":5}",
        "Content-Type", "text/plain").statusCode()).isEqualTo(415);
    assertThat(server.get("/v1/counters/typed").statusCode()).isEqualTo(404);
    assertThat(server.send("POST", "/v1/counters/typed/incr", "{\"delta\":5}",
        "Content-Type", "application/json; charset=utf-8").statusCode()).isEqualTo(200);
  }

  @Test
  void corsIsAnsweredForTheAllowlistOnly() {
    HttpResponse<String> pre = server.send("OPTIONS", "/v1/counters/c/incr", null,
        "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST",
        "Access-Control-Request-Headers", "content-type");
    assertThat(pre.statusCode()).isEqualTo(204);
    assertThat(pre.headers().firstValue("Access-Control-Allow-Origin"))
        .hasValue("https://app.example.com");
    assertThat(pre.headers().firstValue("Access-Control-Allow-Methods").orElseThrow())
        .contains("POST");
    HttpResponse<String> post = server.send("POST", "/v1/counters/c/incr", "{}",
        "Origin", "https://app.example.com", "Sec-Fetch-Site", "cross-site");
    assertThat(post.statusCode()).isEqualTo(200);
    assertThat(post.headers().firstValue("Access-Control-Allow-Origin"))
        .hasValue("https://app.example.com");
    assertThat(post.headers().firstValue("Access-Control-Expose-Headers").orElseThrow())
        .contains("RateLimit");

    HttpResponse<String> other = server.send("OPTIONS", "/v1/counters/c/incr", null,
        "Origin", "https://evil.example.com", "Access-Control-Request-Method", "POST");
    assertThat(other.statusCode()).isEqualTo(403);
    assertThat(other.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
  }

  @Test
  void withATokenTheRefusedRequestsStillNeedIt() throws Exception {
    Path token = Files.createTempFile("tally-token", "");
    Files.writeString(token, "0123456789abcdef0123456789abcdef");
    try (ServerProcess secured = ServerProcess.start(Map.of(), "--store", "mem:",
        "--token-file", token.toString())) {
      HttpResponse<String> csrf = secured.send("POST", "/v1/counters/csrf/incr",
          "{\"delta\":1000}", "Origin", "http://attacker.example", "Content-Type", "text/plain");
      assertThat(csrf.statusCode()).isEqualTo(401);
      HttpResponse<String> rebind = ServerProcess.HTTP.send(java.net.http.HttpRequest.newBuilder(
              secured.loopback("/v1/counters")).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(rebind.statusCode()).isEqualTo(401);
      assertThat(secured.send("GET", "/v1/counters/csrf", null,
          "Authorization", "Bearer 0123456789abcdef0123456789abcdef").statusCode())
          .as("nothing was applied").isEqualTo(404);
    } finally {
      Files.deleteIfExists(token);
    }
  }
}
