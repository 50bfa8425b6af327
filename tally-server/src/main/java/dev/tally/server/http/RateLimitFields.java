package dev.tally.server.http;

/**
 * What remains of the server's own rendering of the {@code RateLimit} fields, now
 * {@link dev.tally.http.RateLimitFields}'s: the rounding {@link GrpcEndpoint} still calls by this
 * name. Remove it once that class calls {@code dev.tally.http.RateLimitFields.ceilSeconds}.
 */
final class RateLimitFields {
  private RateLimitFields() {}

  /** Nanoseconds as whole seconds, rounded up. */
  static long ceilSeconds(long nanos) {
    return dev.tally.http.RateLimitFields.ceilSeconds(nanos);
  }
}
