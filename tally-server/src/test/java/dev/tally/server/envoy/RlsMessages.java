package dev.tally.server.envoy;

import com.google.protobuf.UInt64Value;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.Unit;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Envoy's messages for the tests' client, built with the classes generated from Envoy's own
 * protos (as Envoy would send them), from Tally's descriptor records.
 */
public final class RlsMessages {
  private RlsMessages() {}

  /** A request of {@code domain}, with the request-wide {@code hits} (0: unset). */
  public static RateLimitRequest request(String domain, long hits, Descriptor... descriptors) {
    RateLimitRequest.Builder b = RateLimitRequest.newBuilder().setDomain(domain)
        .setHitsAddend((int) hits);
    for (Descriptor d : descriptors) {
      b.addDescriptors(descriptor(d));
    }
    return b.build();
  }

  /** {@code d} as Envoy sends it: entries, limit override, own hits_addend. */
  public static RateLimitDescriptor descriptor(Descriptor d) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (Entry e : d.entries()) {
      b.addEntries(RateLimitDescriptor.Entry.newBuilder().setKey(e.key()).setValue(e.value()));
    }
    if (d.override() != null) {
      b.setLimit(RateLimitDescriptor.RateLimitOverride.newBuilder()
          .setRequestsPerUnit((int) d.override().requestsPerUnit())
          .setUnitValue(d.override().unit() == null ? 0 : d.override().unit().number()));
    }
    if (d.hitsAddend() != null) {
      b.setHitsAddend(UInt64Value.of(d.hitsAddend()));
    }
    return b.build();
  }

  /** A descriptor of {@code key, value, key, value...}. */
  public static Descriptor d(String... kv) {
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < kv.length; i += 2) {
      entries.add(new Entry(kv[i], kv[i + 1]));
    }
    return new Descriptor(entries, null);
  }

  /** {@code d} carrying its own hits_addend. */
  public static Descriptor withHits(Descriptor d, long hits) {
    return new Descriptor(d.entries(), d.override(), hits);
  }

  /** A limit as a status carries it. */
  public static RateLimit limit(long rpu, Unit unit) {
    return RateLimit.newBuilder().setRequestsPerUnit((int) rpu).setUnitValue(unit.number()).build();
  }

  /** A descriptor status as the server should send it. */
  public static DescriptorStatus status(RateLimitResponse.Code code, RateLimit limit,
      long remaining, Duration reset) {
    DescriptorStatus.Builder b = DescriptorStatus.newBuilder().setCode(code)
        .setLimitRemaining((int) remaining);
    if (limit != null) {
      b.setCurrentLimit(limit);
    }
    if (reset != null) {
      b.setDurationUntilReset(com.google.protobuf.Duration.newBuilder()
          .setSeconds(reset.getSeconds()).setNanos(reset.getNano()));
    }
    return b.build();
  }

  /** {@code ShouldRateLimit} carrying bytes as they are: to send what no valid request encodes to. */
  public static MethodDescriptor<byte[], byte[]> rawMethod() {
    return RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(new GrpcEndpoint.Bytes(), new GrpcEndpoint.Bytes())
        .build();
  }

  /** The response headers Envoy is asked to add. */
  public static Map<String, String> headers(RateLimitResponse r) {
    return r.getResponseHeadersToAddList().stream()
        .collect(Collectors.toMap(HeaderValue::getKey, HeaderValue::getValue));
  }
}
