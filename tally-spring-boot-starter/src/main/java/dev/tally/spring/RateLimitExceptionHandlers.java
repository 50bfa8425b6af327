package dev.tally.spring;

import dev.tally.http.Problem;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.server.ServerWebExchange;

/**
 * Answers {@link RateLimitExceededException} from a controller (or a service it called) the way
 * the filters answer a denial: 429, the header fields, the RFC 9457 body; and
 * {@link ConcurrencyLimitExceededException}: 429 {@code Too Many Requests} with the limit's name and
 * size, or 503 when the store failed and the limit fails closed. Ordered first, so that
 * an application's catch-all handler does not turn it into a 500; an application that wants
 * another answer declares its own bean of the same type.
 */
final class RateLimitExceptionHandlers {
  private static final MediaType PROBLEM_JSON = MediaType.parseMediaType(ProblemResponses.PROBLEM_JSON);

  private RateLimitExceptionHandlers() {}

  /** The answer to {@code e}, reporting the filter's policies too when a filter rule limited the request. */
  static ResponseEntity<String> answer(RateLimitExceededException e, JoinedVerdicts.Attributes request, String path) {
    RateLimitVerdict v = JoinedVerdicts.refusal(request, e.verdict());
    HttpHeaders headers = new HttpHeaders();
    ProblemResponses.setFields(v, headers::set);
    headers.setContentType(PROBLEM_JSON);
    return new ResponseEntity<>(v.problemJson(path), headers, HttpStatus.valueOf(v.status()));
  }

  /** The answer to {@code e}: no header fields, as a concurrency limit has no quota or reset to report. */
  static ResponseEntity<String> answer(ConcurrencyLimitExceededException e) {
    Problem body = e.storeFailed() ? Problem.storeUnavailable(e.getMessage())
        : Problem.of(429, "about:blank", "Too Many Requests", e.getMessage());
    HttpHeaders headers = new HttpHeaders();
    headers.setContentType(PROBLEM_JSON);
    if (e.storeFailed()) {
      headers.set(HttpHeaders.RETRY_AFTER, "1");
    }
    return new ResponseEntity<>(body.member("name", e.name()).member("maxPermits", e.maxPermits()).toJson(), headers,
        HttpStatus.valueOf(body.status()));
  }

  /** For Spring MVC. */
  @RestControllerAdvice
  @Order(Ordered.HIGHEST_PRECEDENCE)
  public static class Servlet {
    @ExceptionHandler(RateLimitExceededException.class)
    public ResponseEntity<String> rateLimitExceeded(RateLimitExceededException e, HttpServletRequest request) {
      return answer(e, WebRequests.attributes(request),
          request.getRequestURI().substring(request.getContextPath().length()));
    }

    @ExceptionHandler(ConcurrencyLimitExceededException.class)
    public ResponseEntity<String> concurrencyLimitExceeded(ConcurrencyLimitExceededException e) {
      return answer(e);
    }
  }

  /** For WebFlux. */
  @RestControllerAdvice
  @Order(Ordered.HIGHEST_PRECEDENCE)
  public static class Reactive {
    @ExceptionHandler(RateLimitExceededException.class)
    public ResponseEntity<String> rateLimitExceeded(RateLimitExceededException e, ServerWebExchange exchange) {
      return answer(e, ReactiveExchanges.attributes(exchange),
          exchange.getRequest().getPath().pathWithinApplication().value());
    }

    @ExceptionHandler(ConcurrencyLimitExceededException.class)
    public ResponseEntity<String> concurrencyLimitExceeded(ConcurrencyLimitExceededException e) {
      return answer(e);
    }
  }
}
