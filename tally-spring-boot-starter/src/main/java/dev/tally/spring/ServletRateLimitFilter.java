package dev.tally.spring;

import dev.tally.StoreException;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The rate-limit filter of a servlet application, driven by {@code tally.filter.rules}: a request
 * that a rule denies is answered {@code 429} with the {@code RateLimit}, {@code RateLimit-Policy}
 * and {@code Retry-After} header fields and an RFC 9457 body, and goes no further; an allowed one
 * carries the header fields too. If the store fails under a rule whose failure policy is
 * {@code throw}, the answer is {@code 503}. A rule with post-execution settings is settled when the
 * chain returns normally; a request that threw or went asynchronous keeps what it was charged.
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
    FilterRules.Matched matched = rules.targets(WebRequests.of(request, null), path);
    if (matched.isEmpty()) {
      chain.doFilter(request, response);
      return;
    }
    RateLimitVerdict verdict;
    try {
      verdict = limits.check(matched.targets());
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
    // For @RateLimited on the handler: its policies join these in the response.
    JoinedVerdicts.Attributes attributes = WebRequests.attributes(request);
    JoinedVerdicts.filterAllowed(attributes, verdict);
    chain.doFilter(request, response);
    if (JoinedVerdicts.refusedAfterFilter(attributes) && response.getStatus() == 429) {
      // @RateLimited refused the request: as with one rule's policies, a refusal costs the others
      // nothing. (A refusal the application caught and answered otherwise was served: it counts.)
      matched.giveBack(limits, verdict);
    } else if (matched.settlesAfter() && !request.isAsyncStarted()) {
      // Only once the chain returns normally is the status final; a request that threw, or went
      // asynchronous (its status is not known yet), keeps its charge.
      matched.settle(limits, verdict, new RateLimitResponse(response.getStatus(), response::getHeader));
    }
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
