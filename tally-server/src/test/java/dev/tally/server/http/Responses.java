package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.http.HttpResponse;

/** What every answer of the HTTP API is held to: a JSON body, and an RFC 9457 problem for an error. */
final class Responses {
  static final ObjectMapper JSON = new ObjectMapper();

  private Responses() {}

  static JsonNode json(HttpResponse<String> r) {
    try {
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new AssertionError("not JSON: " + r.body(), e);
    }
  }

  static JsonNode ok(HttpResponse<String> r) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
    return json(r);
  }

  static JsonNode status(int status, HttpResponse<String> r) {
    assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
    JsonNode body = json(r);
    if (status >= 400) { // every error is an RFC 9457 problem
      assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      assertThat(body.get("status").asInt()).isEqualTo(status);
      assertThat(body.get("type").asText()).isIn("about:blank",
          "https://iana.org/assignments/http-problem-types#quota-exceeded");
      assertThat(body.get("title").asText()).isNotBlank();
      assertThat(body.get("detail").asText()).isNotBlank();
    }
    return body;
  }
}
