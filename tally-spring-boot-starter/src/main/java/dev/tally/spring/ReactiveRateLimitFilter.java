package dev.tally.spring;

import dev.tally.StoreException;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.List;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The rate-limit filter of a WebFlux application: the same rules, header fields and bodies as
 * {@link ServletRateLimitFilter}. The store is asked on Reactor's bounded-elastic scheduler, so
 * that no event-loop thread waits on it. As on the servlet side, a {@link RateLimited} call on the
 * same request joins its policies to the filter's in the response, and a refusal there gives the
 * filter's units back ({@link JoinedVerdicts}). A rule charged after the response settles its
 * reservations once the chain completes; a request that ends in an error or is cancelled keeps what
 * it reserved.
 */
public class ReactiveRateLimitFilter implements WebFilter, Ordered {
  private static final Log LOG = LogFactory.getLog(ReactiveRateLimitFilter.class);
  private static final MediaType PROBLEM_JSON = MediaType.parseMediaType(ProblemResponses.PROBLEM_JSON);
  /** Stands for "no principal" inside the reactive chain, which carries no nulls. */
  private static final String NO_PRINCIPAL = "";

  private final FilterRules rules;
  private final TallyRateLimits limits;
  private final int order;

  ReactiveRateLimitFilter(FilterRules rules, TallyRateLimits limits, int order) {
    this.rules = rules;
    this.limits = limits;
    this.order = order;
  }

  @Override
  public int getOrder() {
    return order;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    String path = request.getPath().pathWithinApplication().value();
    String method = request.getMethod().name();
    if (rules.isEmpty() || !rules.matches(method, path)) {
      return ReactiveExchanges.within(exchange, chain.filter(exchange));
    }
    return exchange.getPrincipal().map(Principal::getName).defaultIfEmpty(NO_PRINCIPAL)
        .flatMap(principal -> {
          RateLimitRequest facts = facts(request, principal);
          FilterRules.Matched matched = rules.targets(facts, path);
          if (matched.isEmpty()) {
            return ReactiveExchanges.within(exchange, chain.filter(exchange));
          }
          return Mono.fromCallable(() -> (Object) limits.admit(matched.targets()))
              .subscribeOn(Schedulers.boundedElastic())
              .onErrorResume(StoreException.class, Mono::just)
              .flatMap(outcome -> answer(exchange, chain, path, matched, outcome));
        });
  }

  private Mono<Void> answer(ServerWebExchange exchange, WebFilterChain chain, String path,
      FilterRules.Matched matched, Object outcome) {
    if (outcome instanceof StoreException e) {
      LOG.warn("rate-limit store failed; answering 503 (failure-policy throw): " + e);
      return write(exchange.getResponse(), HttpStatus.SERVICE_UNAVAILABLE, ProblemResponses.unavailableJson(path));
    }
    TallyRateLimits.Admission admission = (TallyRateLimits.Admission) outcome;
    RateLimitVerdict verdict = admission.verdict();
    setFields(exchange.getResponse().getHeaders(), verdict);
    if (!verdict.allowed()) {
      return write(exchange.getResponse(), HttpStatus.valueOf(verdict.status()), verdict.problemJson(path));
    }
    // For @RateLimited on the handler: its policies join these in the response.
    JoinedVerdicts.Attributes attributes = ReactiveExchanges.attributes(exchange);
    JoinedVerdicts.filterAllowed(attributes, verdict);
    Mono<Void> served = ReactiveExchanges.within(exchange, chain.filter(exchange));
    if (matched.settlesAfter()) {
      // No response to settle at (an error, or the client went away): the request keeps what it
      // was charged before it ran.
      served = served
          .onErrorResume(e -> onStore(() -> matched.keep(admission)).then(Mono.error(e)))
          .doOnCancel(() -> onStore(() -> matched.keep(admission)).subscribe());
    }
    return served.then(Mono.defer(() -> {
      ServerHttpResponse response = exchange.getResponse();
      int status = response.getStatusCode() == null ? 200 : response.getStatusCode().value();
      if (JoinedVerdicts.refusedAfterFilter(attributes) && status == 429) {
        // @RateLimited refused the request: as with one rule's policies, a refusal costs the others nothing.
        return onStore(() -> matched.giveBack(limits, admission));
      }
      if (!matched.settlesAfter()) {
        return Mono.empty();
      }
      RateLimitResponse answered = new RateLimitResponse(status, name -> response.getHeaders().getFirst(name));
      return onStore(() -> matched.settle(admission, answered));
    }));
  }

  /** {@code call}, run where a thread may wait on the store. */
  private static Mono<Void> onStore(Runnable call) {
    return Mono.fromRunnable(call).subscribeOn(Schedulers.boundedElastic()).then();
  }

  private static RateLimitRequest facts(ServerHttpRequest request, String principal) {
    java.net.InetSocketAddress remote = request.getRemoteAddress();
    String address = remote == null ? null
        : remote.getAddress() != null ? remote.getAddress().getHostAddress() : remote.getHostString();
    return new RateLimitRequest(request.getMethod().name(), request.getPath().value(),
        name -> request.getHeaders().getFirst(name), address,
        principal.equals(NO_PRINCIPAL) ? null : principal, null,
        name -> valuesOf(request.getHeaders().get(name)), name -> valuesOf(request.getQueryParams().get(name)));
  }

  private static List<String> valuesOf(List<String> values) {
    return values == null ? List.of() : values;
  }

  /** Sets the header fields of {@code verdict}. */
  static void setFields(HttpHeaders headers, RateLimitVerdict verdict) {
    ProblemResponses.setFields(verdict, headers::set);
  }

  private static Mono<Void> write(ServerHttpResponse response, HttpStatus status, String json) {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    response.setStatusCode(status);
    response.getHeaders().setContentType(PROBLEM_JSON);
    response.getHeaders().setContentLength(body.length);
    DataBuffer buffer = response.bufferFactory().wrap(body);
    return response.writeWith(Mono.just(buffer));
  }
}
