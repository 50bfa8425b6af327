package dev.tally.spring;

import dev.tally.StoreException;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The rate-limit filter of a servlet application, driven by {@code tally.filter.rules}: a request
 * that a rule denies is answered {@code 429} with the {@code RateLimit}, {@code RateLimit-Policy}
 * and {@code Retry-After} header fields and an RFC 9457 body, and goes no further; an allowed one
 * carries the header fields too. If the store fails under a rule whose failure policy is
 * {@code throw}, the answer is {@code 503}.
 */
public class ServletRateLimitFilter extends OncePerRequestFilter {
  private static final Log LOG = LogFactory.getLog(ServletRateLimitFilter.class);

  private final FilterRules rules;
  private final TallyRateLimits limits;

  ServletRateLimitFilter(FilterRules rules, TallyRateLimits limits) {
    this.rules = rules;
    this.limits = limits;
  }

  @Override
  protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    String path = request.getRequestURI().substring(request.getContextPath().length());
    if (rules.isEmpty() || !rules.matches(request.getMethod(), path)) {
      chain.doFilter(request, response);
      return;
    }
    List<TallyRateLimits.Target> targets = rules.targets(WebRequests.of(request, null), path);
    RateLimitVerdict verdict;
    try {
      verdict = limits.check(targets);
    } catch (StoreException e) {
      LOG.warn("rate-limit store failed; answering 503 (failure-policy throw): " + e);
      write(response, 503, ProblemResponses.unavailableJson(path));
      return;
    }
    setFields(response, verdict);
    if (!verdict.allowed()) {
      write(response, verdict.status(), verdict.problemJson(path));
      return;
    }
    chain.doFilter(request, response);
  }

  /** Sets the header fields of {@code verdict} on {@code response}. */
  static void setFields(HttpServletResponse response, RateLimitVerdict verdict) {
    ProblemResponses.setFields(verdict, response::setHeader);
  }

  private static void write(HttpServletResponse response, int status, String json) throws IOException {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    response.setStatus(status);
    response.setContentType(ProblemResponses.PROBLEM_JSON);
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
    response.flushBuffer();
  }
}
