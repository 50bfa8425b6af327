package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.http.HttpHeaders;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The judge of {@link OpenApiConformanceIT} is not lenient: answers as the server gives them
 * pass, and each kind of deviation from docs/openapi.yaml is caught and named. The exchanges
 * are written out here, one deviation at a time, from answers the server really gives.
 */
class OpenApiContractTest {
  private static final OpenApiContract SPEC = OpenApiContract.load(
      Path.of(System.getProperty("tally.openapi", "../docs/openapi.yaml")));
  private static final String JSON = "application/json";
  private static final String PROBLEM = "application/problem+json";
  private static final String NOT_FOUND = "{\"type\":\"about:blank\",\"title\":\"Not Found\","
      + "\"status\":404,\"detail\":\"no route /x\",\"error\":\"not_found\",\"message\":\"no route /x\"}";
  private static final String NO_ROUTE = NOT_FOUND.replace("not_found", "no_route");
  private static final String DECISION = "{\"name\":\"l\",\"allowed\":true,\"permits\":1,"
      + "\"remaining\":0,\"limit\":1,\"retryAfterMillis\":0,\"resetAfterMillis\":3600000}";
  private static final String LIMIT = "{\"limit\":{\"tokenBucket\":\"1/1h\"}}";

  private static HttpHeaders headers(String... namesAndValues) {
    Map<String, List<String>> map = new LinkedHashMap<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      map.put(namesAndValues[i], List.of(namesAndValues[i + 1]));
    }
    return HttpHeaders.of(map, (name, value) -> true);
  }

  private static OpenApiContract.Exchange answer(String method, String target, String requestBody,
      int status, HttpHeaders headers, String body) {
    Map<String, String> sent = requestBody == null ? Map.of() : Map.of("Content-Type", JSON);
    return new OpenApiContract.Exchange(method, target, sent, requestBody, status, headers, body);
  }

  private static void passes(OpenApiContract.Exchange x) {
    assertThatCode(() -> SPEC.check(x)).doesNotThrowAnyException();
  }

  private static void deviates(OpenApiContract.Exchange x, String because) {
    assertThatThrownBy(() -> SPEC.check(x)).isInstanceOf(AssertionError.class)
        .hasMessageContaining(because);
  }

  @Test
  void aCounterAnswerPassesAndEachChangeToItIsCaught() {
    String incr = "/v1/counters/views/incr";
    passes(answer("POST", incr, null, 200, headers("Content-Type", JSON), "{\"key\":\"views\",\"value\":1}"));
    passes(answer("POST", incr + "?int64=string", null, 200, headers("Content-Type", JSON),
        "{\"key\":\"views\",\"value\":\"1\"}"));
    deviates(answer("POST", incr + "?int64=string", null, 200, headers("Content-Type", JSON),
        "{\"key\":\"views\",\"value\":1}"), "int64=string, yet /value is the number 1");
    deviates(answer("POST", incr, null, 200, headers("Content-Type", JSON), "{\"key\":\"views\"}"),
        "required property 'value' not found");
    deviates(answer("POST", incr, null, 200, headers("Content-Type", JSON),
        "{\"key\":\"views\",\"value\":1,\"ttl\":null}"), "'ttl' is not defined in the schema");
    deviates(answer("POST", incr, null, 200, headers("Content-Type", JSON),
        "{\"key\":\"views\",\"value\":\"one\"}"), "does not match the regex pattern");
    deviates(answer("POST", incr, null, 200, headers("Content-Type", "text/html"), "<p>1</p>"),
        "Content-Type text/html is not declared");
    deviates(answer("POST", incr, null, 418, headers("Content-Type", PROBLEM), NOT_FOUND),
        "status 418 is not listed for POST /v1/counters/{key}/incr");
    deviates(answer("POST", incr, null, 200, headers("Content-Type", JSON, "RateLimit",
        "\"default\";r=0;t=1"), "{\"key\":\"views\",\"value\":1}"), "carries RateLimit");
    deviates(answer("HEAD", "/v1/counters/views", null, 200, headers("Content-Type", JSON),
        "{\"key\":\"views\",\"value\":1}"), "a HEAD answer has a body");
  }

  @Test
  void anErrorMustBeTheProblemItsStatusDeclares() {
    passes(answer("GET", "/v1/counters/nope", null, 404, headers("Content-Type", PROBLEM),
        NOT_FOUND));
    deviates(answer("GET", "/v1/counters/nope", null, 404, headers("Content-Type", JSON),
        NOT_FOUND), "Content-Type application/json is not declared for 404");
    deviates(answer("GET", "/v1/counters/nope", null, 404, headers("Content-Type", PROBLEM),
        NOT_FOUND.replace("not_found", "missing")), "/error");
    deviates(answer("GET", "/v1/counters/nope", null, 401, headers("Content-Type", PROBLEM),
        NOT_FOUND.replace("404", "401").replace("not_found", "unauthorized")),
        "the required field WWW-Authenticate is missing");
  }

  @Test
  void aDecisionNeedsItsHeaderFields() {
    String tryPath = "/v1/limiters/l/try";
    passes(answer("POST", tryPath, LIMIT, 200, headers("Content-Type", JSON, "RateLimit-Policy",
        "\"default\";q=1;w=3600", "RateLimit", "\"default\";r=0;t=3600"), DECISION));
    // a fail-open answer has neither field (the failure policy decided, not a quota)
    passes(answer("POST", tryPath, LIMIT, 200, headers("Content-Type", JSON), DECISION));
    passes(answer("POST", tryPath, LIMIT, 200, headers("Content-Type", JSON, "RateLimit-Policy",
        "\"default\";q=5", "RateLimit", "\"default\";r=0;t=3600"), DECISION));
    deviates(answer("POST", tryPath, LIMIT, 200, headers("Content-Type", JSON, "RateLimit-Policy",
        "\"default\";w=3600", "RateLimit", "\"default\";r=0;t=3600"), DECISION), "field RateLimit-Policy");
    deviates(answer("POST", tryPath, LIMIT, 200, headers("Content-Type", JSON, "RateLimit-Policy",
        "\"default\";q=1;w=3600", "RateLimit", "default;r=0"), DECISION), "field RateLimit");
  }

  @Test
  void whatTheServerAcceptedMustBeWhatTheDocumentDescribes() {
    HttpHeaders ok = headers("Content-Type", JSON, "RateLimit-Policy", "\"default\";q=1;w=3600",
        "RateLimit", "\"default\";r=0;t=3600");
    deviates(answer("POST", "/v1/limiters/l/try", "{\"limit\":{\"tokenBucket\":\"1/1h\"},"
        + "\"priority\":1}", 200, ok, DECISION), "request body");
    deviates(answer("POST", "/v1/limiters/l/try?dryRun=true", LIMIT, 200, ok, DECISION),
        "query parameter 'dryRun'");
    deviates(answer("POST", "/v1/limiters/l/try", null, 200, ok, DECISION),
        "requires one");
  }

  @Test
  void aRouteOrMethodTheDocumentDoesNotKnowMustBeRefused() {
    passes(answer("GET", "/v2/counters", null, 404, headers("Content-Type", PROBLEM), NO_ROUTE));
    deviates(answer("GET", "/v2/counters", null, 404, headers("Content-Type", PROBLEM), NOT_FOUND),
        "no_route");
    deviates(answer("GET", "/v2/counters", null, 200, headers("Content-Type", JSON), "{}"),
        "no path of the document matches /v2/counters");
    String notAllowed = "{\"type\":\"about:blank\",\"title\":\"Method Not Allowed\",\"status\":405,"
        + "\"detail\":\"d\",\"error\":\"method_not_allowed\",\"message\":\"d\"}";
    passes(answer("DELETE", "/ping", null, 405, headers("Content-Type", PROBLEM, "Allow",
        "GET, HEAD, OPTIONS"), notAllowed));
    deviates(answer("DELETE", "/ping", null, 405, headers("Content-Type", PROBLEM, "Allow",
        "GET, DELETE, HEAD, OPTIONS"), notAllowed), "Allow says");
    deviates(answer("DELETE", "/ping", null, 200, headers("Content-Type", JSON), "{\"pong\":true}"),
        "the document has no DELETE on /ping");
  }
}
