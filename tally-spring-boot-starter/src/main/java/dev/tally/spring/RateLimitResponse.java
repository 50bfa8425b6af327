package dev.tally.spring;

import java.util.function.Function;

/**
 * The response a filter rule's post-execution condition and cost read: the root object of those
 * expressions, and the variable {@code #response}.
 *
 * <pre>
 * status, getStatus()      401
 * header('X-Tokens-Used')  a response header, or null
 * </pre>
 *
 * <p>{@code getStatus() eq 401}, bucket4j's example, reads the same here.
 */
public final class RateLimitResponse {
  private final int status;
  private final Function<String, String> headers;

  RateLimitResponse(int status, Function<String, String> headers) {
    this.status = status;
    this.headers = headers;
  }

  /** The response's status code. */
  public int getStatus() {
    return status;
  }

  /** The first value of the response header {@code name}, or null. */
  public String header(String name) {
    return headers.apply(name);
  }

  /** {@link #header(String)}, by the name a servlet response gives it. */
  public String getHeader(String name) {
    return header(name);
  }

  @Override
  public String toString() {
    return Integer.toString(status);
  }
}
