package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The fast paths read and write exactly what Jackson does, and leave the rest to it. */
class FastJsonTest {
  private static JsonNode jackson(String json) throws Exception {
    return Json.MAPPER.readTree(json.getBytes(StandardCharsets.UTF_8));
  }

  /** Every node of {@code a} is of the same class as its counterpart in {@code b}. */
  private static void sameClasses(JsonNode a, JsonNode b) {
    assertThat(a.getClass()).isEqualTo(b.getClass());
    if (a.isContainerNode()) {
      assertThat(a.size()).isEqualTo(b.size());
      if (a.isObject()) {
        a.properties().forEach(e -> sameClasses(e.getValue(), b.get(e.getKey())));
      } else {
        for (int i = 0; i < a.size(); i++) {
          sameClasses(a.get(i), b.get(i));
        }
      }
    }
  }

  @Test
  void readsTheCommonShapesAsJacksonDoes() throws Exception {
    for (String json : List.of("{}", " { } ", "{\"delta\":1}", "{\"delta\": -5, \"default\": 0}",
        "{\"mustExist\":true,\"x\":false,\"y\":null}", "{\"a\":2147483647,\"b\":2147483648}",
        "{\"a\":-2147483648,\"b\":-2147483649,\"c\":999999999999999999}",
        "{\"limit\":{\"tokenBucket\":\"100/1m\",\"policy\":\"p\"},\"permits\":3}",
        "{\"limits\":[{\"quota\":\"10/1d\"},{\"fixedWindow\":\"5/1s\"}],\"maxWait\":\"2s\"}",
        "{\"ops\":[{\"op\":\"incr\",\"key\":\"a\"},{\"op\":\"get\",\"key\":\"b\"}], \"e\":[]}",
        "{\"k\":\"\",\"-0\":-0}", "\t{\r\n\"a\" : [ 1 , [ 2 ] ]\n}\n")) {
      ObjectNode fast = FastJson.parseObject(json.getBytes(StandardCharsets.UTF_8));
      assertThat(fast).as(json).isNotNull().isEqualTo(jackson(json));
      sameClasses(fast, jackson(json));
    }
  }

  @Test
  void leavesEverythingElseToJackson() {
    for (String json : List.of("{\"a\":1.5}", "{\"a\":1e3}", "{\"a\":01}", "{\"a\":1234567890123456789}",
        "{\"a\":\"\\n\"}", "{\"a\":\"caf\u00e9\"}", "{\"a\":1,\"a\":2}", "{\"a\":1}x", "{\"a\":1",
        "{\"a\":tru}", "{\"a\":truex}", "{'a':1}", "{\"a\":1,}", "[1]", "\"s\"", "{\"a\" 1}",
        "{\"a\":-}", "{\"a\":\f1}", "{\"a\":NaN}")) {
      assertThat(FastJson.parseObject(json.getBytes(StandardCharsets.UTF_8))).as(json).isNull();
    }
  }

  @Test
  void writesTheBytesJacksonWrites() throws Exception {
    List<JsonNode> nodes = new ArrayList<>();
    ObjectNode counter = Json.object().put("key", "views:\"q\"\\x/y").put("value", Long.MIN_VALUE);
    nodes.add(counter);
    ObjectNode decision = Json.object().put("name", "b").put("allowed", false).put("permits", 1)
        .put("remaining", 0).put("limit", 100).put("retryAfterMillis", 1234)
        .put("rate", 0.1).put("big", 1e300).put("small", -5e-324);
    decision.putNull("ttl");
    decision.putArray("keys").add("a").add(7).addObject().put("deep", true);
    nodes.add(decision);
    nodes.add(Json.object());
    for (JsonNode n : nodes) {
      assertThat(new String(FastJson.write(n), StandardCharsets.US_ASCII))
          .isEqualTo(Json.MAPPER.writeValueAsString(n));
      assertThat(Json.string(n)).isEqualTo(Json.MAPPER.writeValueAsString(n));
    }
    for (JsonNode n : List.of(Json.object().put("k", "line\nbreak"), Json.object().put("k", "é"),
        Json.object().put("k", Double.NaN), Json.object().put("k", new java.math.BigDecimal("1.50")))) {
      assertThat(FastJson.write(n)).as(n.toString()).isNull();
      assertThat(Json.bytes(n)).isEqualTo(Json.MAPPER.writeValueAsBytes(n)); // Jackson wrote it
    }
  }
}
