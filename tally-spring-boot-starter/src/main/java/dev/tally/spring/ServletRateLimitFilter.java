package dev.tally.spring;

import dev.tally.StoreException;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
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
 * {@code throw}, the answer is {@code 503}. A rule with post-execution settings reserves its
 * permits before the request and settles them once the response is known: when the chain returns,
 * or when an asynchronous request completes. A request that threw keeps what it reserved.
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
    TallyRateLimits.Admission admission;
    try {
      admission = limits.admit(matched.targets());
    } catch (StoreException e) {
      LOG.warn("rate-limit store failed; answering 503 (failure-policy throw): " + e);
      write(response, 503, ProblemResponses.unavailableJson(path));
      return;
    }
    RateLimitVerdict verdict = admission.verdict();
    setFields(response, verdict);
    if (!verdict.allowed()) {
      write(response, verdict.status(), verdict.problemJson(path));
      return;
    }
    // For @RateLimited on the handler: its policies join these in the response.
    JoinedVerdicts.Attributes attributes = WebRequests.attributes(request);
    JoinedVerdicts.filterAllowed(attributes, verdict);
    try {
      chain.doFilter(request, response);
    } catch (IOException | ServletException | RuntimeException e) {
      // No response to settle at: the request keeps what it was charged before it ran.
      matched.keep(admission);
      throw e;
    }
    if (JoinedVerdicts.refusedAfterFilter(attributes) && response.getStatus() == 429) {
      // @RateLimited refused the request: as with one rule's policies, a refusal costs the others
      // nothing. (A refusal the application caught and answered otherwise was served: it counts.)
      matched.giveBack(limits, admission);
    } else if (matched.settlesAfter() && request.isAsyncStarted()) {
      // The status is final only once the asynchronous request completes.
      request.getAsyncContext().addListener(new SettleOnCompletion(matched, admission, response));
    } else if (matched.settlesAfter()) {
      matched.settle(admission, answered(response));
    }
  }

  private static RateLimitResponse answered(HttpServletResponse response) {
    return new RateLimitResponse(response.getStatus(), response::getHeader);
  }

  /** Settles an asynchronous request's reservations once it completes (after an error or a timeout too). */
  private record SettleOnCompletion(FilterRules.Matched matched, TallyRateLimits.Admission admission,
      HttpServletResponse response) implements AsyncListener {
    @Override
    public void onComplete(AsyncEvent event) {
      matched.settle(admission, answered(response));
    }

    @Override
    public void onTimeout(AsyncEvent event) {}

    @Override
    public void onError(AsyncEvent event) {}

    @Override
    public void onStartAsync(AsyncEvent event) {
      // Started again (a later dispatch went asynchronous too): listeners must be added anew.
      event.getAsyncContext().addListener(this);
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
