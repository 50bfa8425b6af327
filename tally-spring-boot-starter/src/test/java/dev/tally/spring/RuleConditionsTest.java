package dev.tally.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.http.server.PathContainer;

/** Predicates as bucket4j-spring-boot-starter writes them, and the query they read. */
class RuleConditionsTest {
  private static RateLimitRequest request(String method, String query, Map<String, List<String>> headers) {
    return new RateLimitRequest(method, "/p", name -> headers.getOrDefault(name, List.of()).stream().findFirst()
        .orElse(null), "10.0.0.1", null, Map.of(), name -> headers.getOrDefault(name, List.of()),
        name -> WebRequests.queryParameter(query, name));
  }

  private static boolean test(String predicate, RateLimitRequest r, String path) {
    return RuleConditions.predicate(predicate, "p").test(r, PathContainer.parsePath(path));
  }

  @Test
  void queryParametersAreReadFromTheRawQueryDecoded() {
    assertThat(WebRequests.queryParameter("a=1&debug&b=x%20y&a=2", "a")).containsExactly("1", "2");
    assertThat(WebRequests.queryParameter("a=1&debug&b=x%20y", "debug")).containsExactly("");
    assertThat(WebRequests.queryParameter("a=1&debug&b=x%20y", "b")).containsExactly("x y");
    assertThat(WebRequests.queryParameter("my%20key=v", "my key")).containsExactly("v");
    assertThat(WebRequests.queryParameter("debugger=1", "debug")).isEmpty();
    assertThat(WebRequests.queryParameter(null, "a")).isEmpty();
    assertThat(WebRequests.queryParameter("a=%zz", "a")).containsExactly("%zz");
  }

  @Test
  void eachKindMatchesWhatItSays() {
    RateLimitRequest r = request("POST", "debug&x=1", Map.of("Accept", List.of("text/html", "application/pdf")));
    assertThat(test("PATH=/api/**,/admin", r, "/api/a/b")).isTrue();
    assertThat(test("PATH=/api/**,/admin", r, "/admin")).isTrue();
    assertThat(test("PATH=/api/**,/admin", r, "/other")).isFalse();
    assertThat(test("method=get, post", r, "/")).isTrue();
    assertThat(test("METHOD=GET", r, "/")).isFalse();
    assertThat(test("QUERY=debug", r, "/")).isTrue();
    assertThat(test("QUERY=y", r, "/")).isFalse();
    assertThat(test("HEADER=Accept", r, "/")).isTrue();
    assertThat(test("HEADER=X-Key", r, "/")).isFalse();
    assertThat(test("HEADER=Accept,.*pdf.*", r, "/")).isTrue();
    assertThat(test("HEADER=Accept,pdf", r, "/")).as("the whole value must match").isFalse();
    assertThat(test("HEADER=Accept,application/(pdf|csv),?", r, "/")).as("commas after the first are the regex's")
        .isTrue();
  }

  @Test
  void piecesOfAValueSplitAtItsCommasAreJoinedBack() {
    assertThat(RuleConditions.rejoined(List.of("PATH=/a", "/b", "HEADER=Accept", ".*pdf.*", "method=GET", "POST")))
        .containsExactly("PATH=/a,/b", "HEADER=Accept,.*pdf.*", "method=GET,POST");
  }

  @Test
  void aBadPredicateSaysWhatAGoodOneLooksLike() {
    assertThatThrownBy(() -> RuleConditions.predicate("PATH", "w")).hasMessageContaining("w: 'PATH' is not a"
        + " predicate; write PATH=/api/**");
    assertThatThrownBy(() -> RuleConditions.predicate("COOKIE=a", "w")).hasMessageContaining("unknown predicate 'COOKIE'");
    assertThatThrownBy(() -> RuleConditions.predicate("PATH=/a/{b", "w")).hasMessageContaining("is not a path pattern");
  }
}
