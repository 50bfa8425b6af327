package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The protocols the server speaks, each with a real client: HTTP/1.1 keep-alive and pipelining
 * (raw socket), HEAD and OPTIONS, HTTP/2 over cleartext by upgrade (the JDK's client) and by
 * prior knowledge (curl), and HTTP/2 over TLS chosen by ALPN (the JDK's client, trusting a
 * certificate openssl makes for the test).
 */
class ProtocolsIT {
  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:");

  @Test
  void pipelinedRequestsAreAnsweredInOrderOnOneConnection() throws IOException {
    String one = "POST /v1/counters/pipe/incr HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"delta\":1}";
    String get = "GET /v1/counters/pipe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    String last = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      // all in one write: the server reads them together and must answer each, in order
      s.getOutputStream().write((one + one + get + one + get + last)
          .getBytes(StandardCharsets.US_ASCII));
      String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
      List<String> bodies = new java.util.ArrayList<>();
      for (String part : all.split("HTTP/1.1 ")) {
        if (!part.isEmpty()) {
          assertThat(part).startsWith("200 ");
          bodies.add(part.substring(part.indexOf("\r\n\r\n") + 4));
        }
      }
      assertThat(bodies).containsExactly("{\"key\":\"pipe\",\"value\":1}",
          "{\"key\":\"pipe\",\"value\":2}", "{\"key\":\"pipe\",\"value\":2}",
          "{\"key\":\"pipe\",\"value\":3}", "{\"key\":\"pipe\",\"value\":3}", "{\"pong\":true}");
    }
  }

  @Test
  void headAnswersLikeGetWithoutABodyAndOptionsListsTheMethods() throws IOException {
    String head = raw("HEAD /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    assertThat(head).startsWith("HTTP/1.1 200 ").containsIgnoringCase("content-length: 13")
        .endsWith("\r\n\r\n");
    HttpResponse<String> options = server.send("OPTIONS", "/v1/counters/k", null);
    assertThat(options.statusCode()).isEqualTo(204);
    assertThat(options.headers().firstValue("Allow")).hasValue("GET, PUT, DELETE, HEAD, OPTIONS");
    assertThat(server.send("HEAD", "/v1/counters/nothing-here", null).statusCode()).isEqualTo(404);
  }

  @Test
  void retryAfterIsSpelledAsTheRfcSpellsIt() throws IOException {
    String limit = "{\"limit\":{\"tokenBucket\":\"1/1m\"}}";
    String req = "POST /v1/limiters/spell/try HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "Content-Type: application/json\r\nContent-Length: " + limit.length() + "\r\n\r\n" + limit;
    String close = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    String out = raw(req + req + close);
    assertThat(out).contains("\r\nRetry-After: ").contains("\r\nRateLimit: \"default\";r=0;t=")
        .contains("\r\nRateLimit-Policy: \"default\";q=1;w=60");
  }

  @Test
  void http2ByUpgradeFromHttp11() throws Exception {
    HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
    HttpResponse<String> first = h2.send(HttpRequest.newBuilder(server.loopback("/ping")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(first.version()).isEqualTo(HttpClient.Version.HTTP_2);
    HttpResponse<String> incr = h2.send(HttpRequest.newBuilder(
            server.loopback("/v1/counters/h2c/incr"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"delta\":7}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(incr.version()).isEqualTo(HttpClient.Version.HTTP_2);
    assertThat(incr.body()).isEqualTo("{\"key\":\"h2c\",\"value\":7}");
  }

  @Test
  void http2WithPriorKnowledge() throws Exception {
    Process p = new ProcessBuilder("curl", "-s", "-i", "--http2-prior-knowledge", "-X", "POST",
        "-H", "Content-Type: application/json", "-d", "{\"delta\":2}",
        server.loopback("/v1/counters/prior/incr").toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).isZero();
    assertThat(out).startsWith("HTTP/2 200").endsWith("{\"key\":\"prior\",\"value\":2}");
  }

  @Test
  void http2OverTlsByAlpn(@TempDir Path dir) throws Exception {
    SelfSigned cert = SelfSigned.make(dir, "server");
    try (ServerProcess tls = ServerProcess.start(Map.of(), "--store", "mem:",
        "--tls-cert", cert.cert().toString(), "--tls-key", cert.key().toString())) {
      assertThat(tls.uri.getScheme()).isEqualTo("https");
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2)
          .sslContext(cert.trusting()).connectTimeout(Duration.ofSeconds(5)).build();
      URI base = URI.create("https://localhost:" + tls.uri.getPort());
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(
              base.resolve("/v1/counters/tls/incr"))
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString("{\"delta\":3}")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.version()).as("ALPN chose h2").isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(r.body()).isEqualTo("{\"key\":\"tls\",\"value\":3}");
      HttpClient h1 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
          .sslContext(cert.trusting()).build();
      HttpResponse<String> r1 = h1.send(HttpRequest.newBuilder(base.resolve("/v1/counters/tls"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r1.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
      assertThat(r1.body()).isEqualTo("{\"key\":\"tls\",\"value\":3}");
    }
  }

  private static String raw(String requests) throws IOException {
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(requests.getBytes(StandardCharsets.US_ASCII));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
    }
  }
}
