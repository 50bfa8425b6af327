package dev.tally.spring;

import java.util.function.BiConsumer;

/**
 * What every front end (servlet filter, WebFlux filter, exception handlers) writes, kept free of
 * both web stacks: an application has one of them, and a class that names the other would fail
 * to load there.
 */
final class ProblemResponses {
  static final String PROBLEM_JSON = "application/problem+json";

  private ProblemResponses() {}

  /** Sets the header fields of {@code verdict} through {@code header} (name, value). */
  static void setFields(RateLimitVerdict verdict, BiConsumer<String, String> header) {
    if (verdict.outcomes().isEmpty()) {
      return;
    }
    header.accept("RateLimit-Policy", verdict.rateLimitPolicyField());
    header.accept("RateLimit", verdict.rateLimitField());
    verdict.retryAfterSeconds().ifPresent(s -> header.accept("Retry-After", Long.toString(s)));
  }

  /** The body of a 503 when the store fails under failure-policy throw; says nothing of the store's address. */
  static String unavailableJson(String path) {
    return new Json().field("type", "about:blank").field("title", "Service Unavailable").field("status", 503)
        .field("detail", "the rate-limit store did not answer; try again later").field("instance", path).end();
  }
}
