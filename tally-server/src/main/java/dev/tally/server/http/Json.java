package dev.tally.server.http;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** The one JSON configuration: strict on input (no duplicates, no trailing data), compact out. */
final class Json {
  static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .nodeFactory(NODES)
      .build();

  private Json() {}

  static ObjectNode object() {
    return NODES.objectNode();
  }

  /** Parses a request body; an empty body is an empty object. */
  static ObjectNode parseObject(byte[] body, String example) {
    if (body.length == 0 || isBlank(body)) {
      return object();
    }
    ObjectNode fast = FastJson.parseObject(body);
    if (fast != null) {
      return fast;
    }
    JsonNode node;
    try (JsonParser p = MAPPER.createParser(body)) {
      node = MAPPER.readTree(p);
      if (p.nextToken() != null) {
        throw new RequestException("malformed JSON: unexpected data after the object");
      }
    } catch (JsonProcessingException e) {
      var at = e.getLocation();
      throw new RequestException("malformed JSON: " + e.getOriginalMessage().lines().findFirst().orElse("")
          + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (node == null || node.isMissingNode()) {
      return object();
    }
    if (!node.isObject()) {
      throw new RequestException("expected a JSON object like " + example);
    }
    return (ObjectNode) node;
  }

  private static boolean isBlank(byte[] body) {
    for (byte b : body) {
      if (b != ' ' && b != '\n' && b != '\r' && b != '\t') {
        return false;
      }
    }
    return true;
  }

  static byte[] bytes(JsonNode node) {
    byte[] fast = FastJson.write(node);
    if (fast != null) {
      return fast;
    }
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  static String string(JsonNode node) {
    byte[] fast = FastJson.write(node);
    if (fast != null) {
      return new String(fast, StandardCharsets.US_ASCII); // the fast form is ASCII
    }
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
