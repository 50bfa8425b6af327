package dev.tally.spring;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.security.Principal;
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
  /** Spring MVC's HandlerMapping.URI_TEMPLATE_VARIABLES_ATTRIBUTE, by name: webmvc is optional. */
  private static final String PATH_VARIABLES = "org.springframework.web.servlet.HandlerMapping.uriTemplateVariables";

  private WebRequests() {}

  static RateLimitRequest current() {
    return SERVLET ? Servlet.current() : RateLimitRequest.NONE;
  }

  static void addHeaders(RateLimitVerdict verdict) {
    if (SERVLET) {
      Servlet.addHeaders(verdict);
    }
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

    static void addHeaders(RateLimitVerdict verdict) {
      if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes servlet) {
        HttpServletResponse response = servlet.getResponse();
        if (response != null && !response.isCommitted()) {
          ServletRateLimitFilter.setFields(response, verdict);
        }
      }
    }
  }

  static RateLimitRequest of(HttpServletRequest request, Map<String, String> variables) {
    Principal principal = request.getUserPrincipal();
    return new RateLimitRequest(request.getMethod(), request.getRequestURI(), request::getHeader,
        request.getRemoteAddr(), principal == null ? null : principal.getName(), variables);
  }
}
