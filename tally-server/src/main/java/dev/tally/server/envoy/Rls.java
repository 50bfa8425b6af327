package dev.tally.server.envoy;

import dev.tally.server.ratelimit.Descriptor;
import java.time.Duration;
import java.util.List;

/**
 * The messages of Envoy's rate limit service ({@code envoy.service.ratelimit.v3}), as plain
 * records: the fields Tally reads and writes, with the numbers {@code src/main/proto/envoy} gives
 * them. {@link RlsCodec} turns them into the protobuf wire format and back.
 */
public final class Rls {
  private Rls() {}

  /** The gRPC service Envoy calls. */
  public static final String SERVICE = "envoy.service.ratelimit.v3.RateLimitService";
  /** {@code RateLimitResponse.Code.OK}. */
  public static final int OK = 1;
  /** {@code RateLimitResponse.Code.OVER_LIMIT}. */
  public static final int OVER_LIMIT = 2;

  /**
   * {@code RateLimitRequest}.
   *
   * @param domain the rules domain
   * @param descriptors the descriptors, with any limit override Envoy sent
   * @param hitsAddend units each matched limit takes; 0 means 1
   */
  public record Request(String domain, List<Descriptor> descriptors, long hitsAddend) {
    /** Copies the list. */
    public Request {
      descriptors = List.copyOf(descriptors);
    }
  }

  /**
   * {@code RateLimitResponse}.
   *
   * @param overallCode {@link #OK} or {@link #OVER_LIMIT}
   * @param statuses one per descriptor of the request
   * @param responseHeaders header fields Envoy adds to its response downstream
   */
  public record Response(int overallCode, List<Status> statuses, List<Header> responseHeaders) {
    /** Copies the lists. */
    public Response {
      statuses = List.copyOf(statuses);
      responseHeaders = List.copyOf(responseHeaders);
    }
  }

  /**
   * {@code RateLimitResponse.DescriptorStatus}.
   *
   * @param code {@link #OK} or {@link #OVER_LIMIT}
   * @param currentLimit the limit that applied, or null
   * @param limitRemaining requests left in the current window
   * @param durationUntilReset until the window ends, or null
   */
  public record Status(int code, Limit currentLimit, long limitRemaining,
      Duration durationUntilReset) {}

  /**
   * {@code RateLimitResponse.RateLimit}.
   *
   * @param name the rule's {@code rate_limit.name}, or empty
   * @param requestsPerUnit requests allowed per window
   * @param unit the window, as Envoy numbers it ({@code SECOND} is 1 ... {@code YEAR} 6)
   */
  public record Limit(String name, long requestsPerUnit, int unit) {}

  /** {@code envoy.config.core.v3.HeaderValue}. */
  public record Header(String key, String value) {}
}
