package dev.tally.spring;

import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The request a rate-limit key is computed from: the root object of key expressions, in
 * {@link RateLimited#key()} and in a filter rule's {@code key: expression:...}.
 *
 * <pre>
 * header('X-Api-Key')     a request header, or null
 * remoteAddress           the client's address (behind a proxy, see server.forward-headers-strategy)
 * principal               the authenticated user's name, or null
 * pathVariable('id')      a variable of the matching path pattern, or null
 * parameter('page')       a query parameter's first value, or null
 * method, path            GET, /api/orders/42
 * </pre>
 *
 * <p>In a filter rule's conditions and plan the request is also the variable {@code #request}, and
 * {@code getHeader(name)} answers as {@code header(name)} does, so that a bucket4j expression
 * such as {@code getHeader('X-Plan')} reads the same.
 *
 * <p>Outside a web request (a {@link RateLimited} service method called from a scheduled job)
 * every one of them is null, and only the method's arguments ({@code #order.customerId}) are there.
 */
public final class RateLimitRequest {
  static final RateLimitRequest NONE = new RateLimitRequest(null, null, name -> null, null, null, Map.of());

  private final String method;
  private final String path;
  private final Function<String, String> headers;
  private final String remoteAddress;
  private final String principal;
  private final Map<String, String> pathVariables;
  private final Function<String, List<String>> headerValues;
  private final Function<String, List<String>> parameters;

  RateLimitRequest(String method, String path, Function<String, String> headers, String remoteAddress,
      String principal, Map<String, String> pathVariables) {
    this(method, path, headers, remoteAddress, principal, pathVariables, RateLimitRequest::noValues,
        RateLimitRequest::noValues);
  }

  /**
   * A request with every value of each header and its query parameters, for the predicates of
   * filter rules.
   */
  RateLimitRequest(String method, String path, Function<String, String> headers, String remoteAddress,
      String principal, Map<String, String> pathVariables, Function<String, List<String>> headerValues,
      Function<String, List<String>> parameters) {
    this.method = method;
    this.path = path;
    this.headers = headers;
    this.remoteAddress = remoteAddress;
    this.principal = principal;
    this.pathVariables = pathVariables == null ? Map.of() : pathVariables;
    this.headerValues = headerValues;
    this.parameters = parameters;
  }

  private static List<String> noValues(String name) {
    return List.of();
  }

  RateLimitRequest withPathVariables(Map<String, String> variables) {
    return new RateLimitRequest(method, path, headers, remoteAddress, principal, variables, headerValues,
        parameters);
  }

  /** {@link #header(String)}, by the name a servlet request gives it. */
  public String getHeader(String name) {
    return header(name);
  }

  /** Every value of the header {@code name}; empty if there is none. */
  List<String> headers(String name) {
    return headerValues.apply(name);
  }

  /** The first value of the query parameter {@code name} (empty if it has no value), or null. */
  public String parameter(String name) {
    List<String> values = parameters.apply(name);
    return values.isEmpty() ? null : values.get(0);
  }

  /** The first value of the header {@code name}, or null. */
  public String header(String name) {
    return headers.apply(name);
  }

  /** A variable of the path pattern that matched, or null. */
  public String pathVariable(String name) {
    return pathVariables.get(name);
  }

  /** The client's address, or null outside a request. */
  public String getRemoteAddress() {
    return remoteAddress;
  }

  /** The authenticated principal's name, or null. */
  public String getPrincipal() {
    return principal;
  }

  /** The HTTP method, or null outside a request. */
  public String getMethod() {
    return method;
  }

  /** The request path (without the query), or null outside a request. */
  public String getPath() {
    return path;
  }

  @Override
  public String toString() {
    return method == null ? "(no request)" : method + " " + path;
  }
}
