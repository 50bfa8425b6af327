package dev.tally.server.http;

import static dev.tally.server.http.Responses.ok;
import static dev.tally.server.http.Responses.status;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Malformed, oversized and invalid requests get a clear 4xx JSON error, and nothing is written:
 * each test reads the store back to prove it.
 */
class BadInputIT {
  @RegisterExtension
  static final ServerForClass server = new ServerForClass("--store", "mem:", "--max-body", "65536");

  static String message(JsonNode error) {
    return error.get("message").asText();
  }

  private static void nothingWritten(String key) {
    status(404, server.get("/v1/counters/" + key));
  }

  @Test
  void malformedJsonIs400AndWritesNothing() {
    JsonNode e = status(400, server.post("/v1/counters/mal/incr", "{\"delta\": 1"));
    assertThat(e.get("error").asText()).isEqualTo("bad_request");
    assertThat(message(e)).startsWith("malformed JSON");
    status(400, server.post("/v1/counters/mal/incr", "{\"delta\": 1} trailing"));
    status(400, server.post("/v1/counters/mal/incr", "{\"delta\": 1, \"delta\": 2}"));
    status(400, server.send("PUT", "/v1/counters/mal", "[1, 2]"));
    status(400, server.send("PUT", "/v1/counters/mal", "not json at all"));
    nothingWritten("mal");
  }

  @Test
  void nonStandardJsonIsRefusedInTheUsersTermsNotJacksons() {
    assertThat(message(status(400, server.post("/v1/counters/ns/incr", "{\"delta\": NaN}"))))
        .isEqualTo("'delta' must be a finite number, not NaN");
    assertThat(message(status(400, server.post("/v1/counters/ns/incr", "{\"delta\": -Infinity}"))))
        .isEqualTo("'delta' must be a finite number, not -Infinity");
    for (String body : new String[] {"{\"delta\": +1}", "{\"delta\": 1 /* one */}",
        "{'delta': 1}"}) {
      assertThat(message(status(400, server.post("/v1/counters/ns/incr", body))))
          .startsWith("malformed JSON: ").doesNotContain("enable").doesNotContain("Feature")
          .doesNotContain("JsonReadFeature");
    }
    nothingWritten("ns");
  }

  @Test
  void wrongTypesAndUnknownFieldsAreNamed() {
    assertThat(message(status(400, server.post("/v1/counters/typ/incr", "{\"delta\":\"1\"}"))))
        .isEqualTo("'delta' must be a number like 5 or 0.5, not \"1\"");
    assertThat(message(status(400, server.post("/v1/counters/typ/incr", "{\"delte\":1}"))))
        .isEqualTo("unknown field 'delte'; expected one of default, delta, max, min, mustExist, onBound");
    assertThat(message(status(400, server.post("/v1/counters/typ/incr", "{\"delta\":1e400}"))))
        .contains("'delta'");
    assertThat(message(status(400, server.post("/v1/counters/typ/incr",
        "{\"delta\":92233720368547758070}")))).contains("64-bit");
    assertThat(message(status(400, server.send("PUT", "/v1/counters/typ", "{\"value\":5,\"ttl\":\"4x\"}"))))
        .isEqualTo("'ttl': '4x' is not a duration: expected a duration like 500ms, 30s, 5m, 40d");
    assertThat(message(status(400, server.send("PUT", "/v1/counters/typ", "{\"value\":5,\"ttl\":\"0s\"}"))))
        .contains("ttl must be positive");
    assertThat(message(status(400, server.send("PUT", "/v1/counters/typ", "{\"ttl\":\"1h\"}"))))
        .contains("missing field 'value'");
    nothingWritten("typ");
  }

  @Test
  void anOversizedBodyIs413AndWritesNothing() {
    String padding = "x".repeat(70_000);
    JsonNode e = status(413, server.send("PUT", "/v1/counters/big", "{\"value\":5,\"pad\":\"" + padding + "\"}"));
    assertThat(e.get("error").asText()).isEqualTo("too_large");
    assertThat(message(e)).contains("the limit is 65536 bytes");
    nothingWritten("big");
    // the server still answers on new connections
    ok(server.get("/ping"));
  }

  @Test
  void anOversizedChunkedBodyIs413Too() throws Exception {
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      OutputStream out = s.getOutputStream();
      out.write(("POST /v1/counters/chunked/incr HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      byte[] chunk = ("8000\r\n" + " ".repeat(0x8000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
      for (int i = 0; i < 3; i++) {
        out.write(chunk);
      }
      out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      String head = new String(in.readNBytes(12), StandardCharsets.US_ASCII);
      assertThat(head).isEqualTo("HTTP/1.1 413");
    }
    nothingWritten("chunked");
  }

  @Test
  void aKeyOverTheLimitIs400AndWritesNothing() {
    String longKey = "k".repeat(1025);
    JsonNode e = status(400, server.post("/v1/counters/" + longKey + "/incr", null));
    assertThat(message(e)).contains("1025 bytes").contains("the limit is 1024");
    assertThat(ok(server.get("/v1/counters?prefix=kkkk")).get("keys")).isEmpty();
    // 1024 bytes is fine
    ok(server.post("/v1/counters/" + "k".repeat(1024) + "/incr", null));
  }

  @Test
  void badPercentEncodingAndInvalidUtf8Are400() throws Exception {
    // The JDK server itself refuses a request line that is not a valid URI (its own 400 page).
    assertThat(server.raw("POST /v1/counters/a%ZZb/incr HTTP/1.1")).startsWith("HTTP/1.1 400");
    assertThat(server.raw("POST /v1/counters/a%25ZZb%2/incr HTTP/1.1")).startsWith("HTTP/1.1 400");
    assertThat(message(status(400, server.post("/v1/counters/a%C3/incr", null))))
        .contains("not valid UTF-8");
    assertThat(ok(server.get("/v1/counters?prefix=a")).get("keys")).isEmpty();
  }

  @Test
  void emptyKeysAndLimiterNamesAre400() {
    status(400, server.post("/v1/counters//incr", null));
    status(400, server.post("/v1/limiters//try", "{\"limit\":{\"tokenBucket\":\"1/1s\"}}"));
  }

  @Test
  void negativePermitsAre400AndTakeNothing() {
    String limit = "\"limit\":{\"tokenBucket\":\"5/1h\"}";
    assertThat(message(status(400, server.post("/v1/limiters/neg/try", "{\"permits\":-1," + limit + "}"))))
        .contains("permits must be zero or more");
    assertThat(ok(server.post("/v1/limiters/neg/peek", "{" + limit + "}")).get("remaining").asLong()).isEqualTo(5);
  }
}
