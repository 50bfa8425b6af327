package dev.tally.spring;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.springframework.util.ClassUtils;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The servlet request a {@link RateLimited} method runs in, if any: its facts for the key, and
 * its response for the header fields of an allowed call. Without Spring MVC on the class path,
 * or outside a request, there is none.
 */
final class WebRequests {
  private static final boolean SERVLET = ClassUtils.isPresent(
      "org.springframework.web.context.request.ServletRequestAttributes", WebRequests.class.getClassLoader())
      && ClassUtils.isPresent("jakarta.servlet.http.HttpServletRequest", WebRequests.class.getClassLoader());
  private static final boolean REACTIVE = ClassUtils.isPresent(
      "org.springframework.web.server.ServerWebExchange", WebRequests.class.getClassLoader())
      && ClassUtils.isPresent("reactor.core.publisher.Mono", WebRequests.class.getClassLoader());
  /** Spring MVC's HandlerMapping.URI_TEMPLATE_VARIABLES_ATTRIBUTE, by name: webmvc is optional. */
  private static final String PATH_VARIABLES = "org.springframework.web.servlet.HandlerMapping.uriTemplateVariables";

  private WebRequests() {}

  static RateLimitRequest current() {
    return SERVLET ? Servlet.current() : RateLimitRequest.NONE;
  }

  /**
   * Sets the header fields of {@code verdict} on the current response, joined to the filter's if it
   * limited the request too ({@link JoinedVerdicts}), and returns the joined verdict (what a denial
   * answers with). On WebFlux the response is reached when the call runs in the filter's turn of
   * the request ({@link ReactiveExchanges}).
   */
  static RateLimitVerdict addHeaders(RateLimitVerdict verdict) {
    RateLimitVerdict all = SERVLET ? Servlet.addHeaders(verdict) : null;
    if (all == null && REACTIVE) {
      all = ReactiveExchanges.addHeaders(verdict);
    }
    return all == null ? verdict : all;
  }

  /** Kept apart so that the servlet API is loaded only when it is there. */
  private static final class Servlet {
    static RateLimitRequest current() {
      RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
      if (!(attributes instanceof ServletRequestAttributes servlet)) {
        return RateLimitRequest.NONE;
      }
      HttpServletRequest request = servlet.getRequest();
      @SuppressWarnings("unchecked")
      Map<String, String> variables = (Map<String, String>) request.getAttribute(PATH_VARIABLES);
      return of(request, variables);
    }

    /** The joined verdict, or null outside a servlet request. */
    static RateLimitVerdict addHeaders(RateLimitVerdict verdict) {
      if (!(RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes servlet)) {
        return null;
      }
      RateLimitVerdict all = JoinedVerdicts.join(attributes(servlet.getRequest()), verdict);
      HttpServletResponse response = servlet.getResponse();
      if (response != null && !response.isCommitted()) {
        ServletRateLimitFilter.setFields(response, all);
      }
      return all;
    }
  }

  /** A servlet request's attributes, as {@link JoinedVerdicts} reads them. */
  static JoinedVerdicts.Attributes attributes(HttpServletRequest request) {
    return new JoinedVerdicts.Attributes() {
      @Override
      public Object get(String name) {
        return request.getAttribute(name);
      }

      @Override
      public void put(String name, Object value) {
        request.setAttribute(name, value);
      }
    };
  }

  static RateLimitRequest of(HttpServletRequest request, Map<String, String> variables) {
    Principal principal = request.getUserPrincipal();
    // The query string, not getParameter: that would read a form body the application has not read yet.
    String query = request.getQueryString();
    return new RateLimitRequest(request.getMethod(), request.getRequestURI(), request::getHeader,
        request.getRemoteAddr(), principal == null ? null : principal.getName(), variables,
        name -> Collections.list(request.getHeaders(name)),
        name -> queryParameter(query, name));
  }

  /** The values of the query parameter {@code name} in the raw query {@code query}, decoded. */
  static List<String> queryParameter(String query, String name) {
    if (query == null || query.isEmpty()) {
      return List.of();
    }
    List<String> values = new ArrayList<>(1);
    int start = 0;
    while (start <= query.length()) {
      int amp = query.indexOf('&', start);
      int end = amp < 0 ? query.length() : amp;
      int eq = query.indexOf('=', start);
      boolean hasValue = eq >= 0 && eq < end;
      String n = decode(query.substring(start, hasValue ? eq : end));
      if (n.equals(name)) {
        values.add(hasValue ? decode(query.substring(eq + 1, end)) : "");
      }
      start = end + 1;
    }
    return values;
  }

  private static String decode(String text) {
    try {
      return URLDecoder.decode(text, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return text; // a malformed escape: compared as sent
    }
  }
}
