package dev.tally.spring;

import dev.tally.http.Problem;
import java.util.function.BiConsumer;

/**
 * What every front end (servlet filter, WebFlux filter, exception handlers) writes, kept free of
 * both web stacks: an application has one of them, and a class that names the other would fail
 * to load there.
 */
final class ProblemResponses {
  static final String PROBLEM_JSON = Problem.MEDIA_TYPE;

  private ProblemResponses() {}

  /** Sets the header fields of {@code verdict} through {@code header} (name, value). */
  static void setFields(RateLimitVerdict verdict, BiConsumer<String, String> header) {
    verdict.headers().forEach(header);
  }

  /** The body of a 503 when the store fails under failure-policy throw; says nothing of the store's address. */
  static String unavailableJson(String path) {
    return Problem.storeUnavailable("the rate-limit store did not answer; try again later").member("instance", path)
        .toJson();
  }
}
