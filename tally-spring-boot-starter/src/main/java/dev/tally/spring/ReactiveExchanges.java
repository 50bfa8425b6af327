package dev.tally.spring;

import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoOperator;

/**
 * The WebFlux exchange a {@link RateLimited} call runs in, when it runs in the filter's turn of
 * the request: what lets it add its header fields to the response and join the filter's verdict
 * ({@link JoinedVerdicts}), as the servlet side does through Spring's request holder. WebFlux
 * has no such holder, so {@link ReactiveRateLimitFilter} names the exchange to the thread that
 * subscribes to the rest of the chain, for as long as that subscription runs. A handler method
 * whose arguments are ready (path variables, headers, query parameters) is called then; one that
 * waits for its request body is called later, on the thread that read the body, and finds no
 * exchange: its refusal is still joined, by the exception handler, which has the exchange, and
 * its allowed call adds no fields.
 */
final class ReactiveExchanges {
  private static final ThreadLocal<ServerWebExchange> CURRENT = new ThreadLocal<>();

  private ReactiveExchanges() {}

  /** {@code chain}, during whose subscription {@code exchange} is the current one on the subscribing thread. */
  static Mono<Void> within(ServerWebExchange exchange, Mono<Void> chain) {
    return new MonoOperator<Void, Void>(chain) {
      @Override
      public void subscribe(CoreSubscriber<? super Void> actual) {
        ServerWebExchange outer = CURRENT.get();
        CURRENT.set(exchange);
        try {
          source.subscribe(actual);
        } finally {
          if (outer == null) {
            CURRENT.remove();
          } else {
            CURRENT.set(outer);
          }
        }
      }
    };
  }

  /** The joined verdict, its fields set on the response; null outside the filter's turn of a request. */
  static RateLimitVerdict addHeaders(RateLimitVerdict verdict) {
    ServerWebExchange exchange = CURRENT.get();
    if (exchange == null) {
      return null;
    }
    RateLimitVerdict all = JoinedVerdicts.join(attributes(exchange), verdict);
    ServerHttpResponse response = exchange.getResponse();
    if (!response.isCommitted()) {
      ReactiveRateLimitFilter.setFields(response.getHeaders(), all);
    }
    return all;
  }

  /** An exchange's attributes, as {@link JoinedVerdicts} reads them. */
  static JoinedVerdicts.Attributes attributes(ServerWebExchange exchange) {
    return new JoinedVerdicts.Attributes() {
      @Override
      public Object get(String name) {
        return exchange.getAttribute(name);
      }

      @Override
      public void put(String name, Object value) {
        exchange.getAttributes().put(name, value);
      }
    };
  }
}
