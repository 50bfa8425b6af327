package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.LimitSpec;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RequestsTest {
  @Test
  void segmentsArePercentDecodedAsStrictUtf8AndPlusStaysAPlus() {
    assertThat(Requests.decode("views:episode:512", "key")).isEqualTo("views:episode:512");
    assertThat(Requests.decode("a%2Fb%20c+d%C3%A9", "key")).isEqualTo("a/b c+dé");
    assertThatThrownBy(() -> Requests.decode("a%2", "key")).hasMessageContaining("bad percent-escape");
    assertThatThrownBy(() -> Requests.decode("a%zz", "key")).hasMessageContaining("bad percent-escape");
    assertThatThrownBy(() -> Requests.decode("%C3%28", "key")).hasMessageContaining("not valid UTF-8");
  }

  @Test
  void queryParametersAreDecodedAndNotRepeated() {
    assertThat(Requests.query("prefix=views%3A&limit=5")).isEqualTo(Map.of("prefix", "views:", "limit", "5"));
    assertThat(Requests.query("prefix")).isEqualTo(Map.of("prefix", ""));
    assertThatThrownBy(() -> Requests.query("a=1&a=2")).hasMessageContaining("given twice");
  }

  @Test
  void limitsNameTheirPoliciesAndRefuseDuplicates() {
    Body b = Body.parse("{\"limits\":[{\"tokenBucket\":\"1/1s\"},{\"gcra\":\"1:1/1s\"}]}".getBytes(),
        "{}", Requests.LIMIT_FIELDS);
    assertThat(Requests.limits(b)).extracting(LimitSpec::name).containsExactly("default", "limit-2");
    Body dup = Body.parse(("{\"limits\":[{\"tokenBucket\":\"1/1s\",\"policy\":\"a\"},"
        + "{\"gcra\":\"1:1/1s\",\"policy\":\"a\"}]}").getBytes(), "{}", Requests.LIMIT_FIELDS);
    assertThatThrownBy(() -> Requests.limits(dup)).hasMessageContaining("used twice");
    Body two = Body.parse("{\"limit\":{\"tokenBucket\":\"1/1s\",\"gcra\":\"1:1/1s\"}}".getBytes(), "{}",
        Requests.LIMIT_FIELDS);
    assertThatThrownBy(() -> Requests.limits(two)).hasMessageContaining("two algorithms");
  }
}
