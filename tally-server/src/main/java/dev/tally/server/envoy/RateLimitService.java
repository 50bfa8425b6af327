package dev.tally.server.envoy;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.TallyException;
import dev.tally.server.async.Stages;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.NamedLimits.Code;
import dev.tally.server.ratelimit.NamedLimits.Outcome;
import dev.tally.server.ratelimit.Rule;
import dev.tally.server.ratelimit.Unit;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * {@code ShouldRateLimit}: Envoy's {@link RateLimitRequest} (the classes protoc generates from
 * Envoy's own {@code rls.proto}) decided by {@link NamedLimits}, and its outcome as a
 * {@link RateLimitResponse}.
 *
 * <p>Every field Envoy sends is read: the domain, each descriptor's entries, its {@code limit}
 * override and its own {@code hits_addend} (a {@code UInt64Value}: present and 0 checks without
 * taking anything), and the request's {@code hits_addend}. Answers carry whole seconds in
 * {@code duration_until_reset} (Envoy reads only the seconds), and {@code limit_remaining} 0 on
 * every {@code OVER_LIMIT} status.
 *
 * <p>Failures map onto gRPC status codes Envoy treats as errors (it then applies its own
 * {@code failure_mode_deny}): a store that cannot be reached is {@code UNAVAILABLE}, a store
 * timeout {@code DEADLINE_EXCEEDED}, a request Tally cannot check (no domain, no or too many
 * descriptors) {@code INVALID_ARGUMENT}, a message that does not parse {@code INTERNAL}. One
 * descriptor Tally cannot decide is refused on its own ({@link NamedLimits}), never the request.
 */
final class RateLimitService {
  private static final System.Logger LOG = System.getLogger("dev.tally.server");

  private final NamedLimits limits;
  private final boolean responseHeaders;
  private final MeterRegistry registry;
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();

  /** {@code responseHeaders}: x-ratelimit-limit, -remaining and -reset for Envoy to add; a null registry times nothing. */
  RateLimitService(NamedLimits limits, boolean responseHeaders, MeterRegistry registry) {
    this.limits = limits;
    this.responseHeaders = responseHeaders;
    this.registry = registry;
  }

  /**
   * A call as its bytes came: parsed here, so that a message that does not parse is answered
   * {@code INTERNAL}, as gRPC's other servers answer it (grpc-java closes a call whose request
   * marshaller fails with {@code UNKNOWN}).
   */
  void shouldRateLimit(byte[] message, StreamObserver<RateLimitResponse> observer) {
    long start = System.nanoTime();
    RateLimitRequest request;
    try {
      request = RateLimitRequest.parseFrom(message);
    } catch (InvalidProtocolBufferException e) {
      fail(observer, start, Status.INTERNAL.withDescription("not a valid"
          + " envoy.service.ratelimit.v3.RateLimitRequest: " + e.getMessage()));
      return;
    }
    shouldRateLimit(request, observer, start);
  }

  private void shouldRateLimit(RateLimitRequest request,
      StreamObserver<RateLimitResponse> observer, long start) {
    if (request.getDomain().isEmpty()) {
      fail(observer, start, Status.INVALID_ARGUMENT.withDescription("the request names"
          + " no domain; set 'domain' in Envoy's rate limit filter"));
      return;
    }
    CompletionStage<Outcome> stage;
    try {
      stage = limits.check(request.getDomain(), descriptors(request),
          Integer.toUnsignedLong(request.getHitsAddend()), null);
    } catch (IllegalArgumentException e) {
      fail(observer, start, Status.INVALID_ARGUMENT.withDescription(e.getMessage()));
      return;
    }
    Stages.handle(stage, (outcome, failure) -> { // answered at once if the stage is done
      answer(observer, start, outcome, failure);
      return null;
    });
  }

  private void answer(StreamObserver<RateLimitResponse> observer, long start, Outcome outcome,
      Throwable failure) {
    if (failure != null) {
      fail(observer, start, status(Stages.unwrap(failure)));
      return;
    }
    RateLimitResponse response = response(outcome);
    if (cancelled(observer)) {
      return;
    }
    try {
      observer.onNext(response);
      observer.onCompleted();
      time(outcome.overall() == Code.OK ? "ok" : "over_limit", start);
    } catch (StatusRuntimeException gone) { // cancelled meanwhile: nobody to answer
      time("cancelled", start);
    }
  }

  /** The request's descriptors as {@link NamedLimits} takes them. */
  static List<Descriptor> descriptors(RateLimitRequest request) {
    List<Descriptor> out = new ArrayList<>(request.getDescriptorsCount());
    for (RateLimitDescriptor d : request.getDescriptorsList()) {
      List<Entry> entries = new ArrayList<>(d.getEntriesCount());
      for (RateLimitDescriptor.Entry e : d.getEntriesList()) {
        entries.add(new Entry(e.getKey(), e.getValue()));
      }
      Descriptor.LimitOverride override = null;
      if (d.hasLimit()) {
        // by number: RateLimitUnit has no WEEK yet, and Envoy may send it as 7 all the same
        override = new Descriptor.LimitOverride(
            Integer.toUnsignedLong(d.getLimit().getRequestsPerUnit()),
            Unit.ofNumber(d.getLimit().getUnitValue()));
      }
      Long hits = null;
      if (d.hasHitsAddend()) {
        long h = d.getHitsAddend().getValue();
        // above 2^63 (negative as a long): more than any limit holds
        hits = h < 0 ? Long.MAX_VALUE : h;
      }
      out.add(new Descriptor(entries, override, hits));
    }
    return out;
  }

  RateLimitResponse response(Outcome o) {
    RateLimitResponse.Builder b = RateLimitResponse.newBuilder().setOverallCode(code(o.overall()));
    NamedLimits.Status closest = null;
    for (NamedLimits.Status s : o.statuses()) {
      Rule r = s.rule();
      DescriptorStatus.Builder status = b.addStatusesBuilder().setCode(code(s.code()))
          .setLimitRemaining(s.code() == Code.OVER_LIMIT ? 0 : uint32(s.remaining()));
      if (r != null && !r.unlimited()) {
        status.setCurrentLimit(RateLimit.newBuilder()
            .setName(r.name() == null ? "" : r.name())
            .setRequestsPerUnit(uint32(r.requestsPerUnit()))
            .setUnitValue(r.unit().number()));
        status.setDurationUntilReset(com.google.protobuf.Duration.newBuilder()
            .setSeconds(ceilSeconds(s.resetNanos())));
      }
      // the headers describe the enforced limit nearest to refusing
      if (s.enforced() && (closest == null || nearer(s, closest))) {
        closest = s;
      }
    }
    if (responseHeaders && closest != null) {
      long remaining = closest.code() == Code.OVER_LIMIT ? 0 : closest.remaining();
      b.addResponseHeadersToAdd(header("x-ratelimit-limit",
          Long.toString(closest.rule().requestsPerUnit())));
      b.addResponseHeadersToAdd(header("x-ratelimit-remaining", Long.toString(remaining)));
      b.addResponseHeadersToAdd(header("x-ratelimit-reset",
          Long.toString(ceilSeconds(closest.resetNanos()))));
    }
    return b.build();
  }

  private static HeaderValue header(String key, String value) {
    return HeaderValue.newBuilder().setKey(key).setValue(value).build();
  }

  private static RateLimitResponse.Code code(Code c) {
    return c == Code.OK ? RateLimitResponse.Code.OK : RateLimitResponse.Code.OVER_LIMIT;
  }

  /** A uint32 field's bits for {@code v}, capped at 2^32 - 1. */
  private static int uint32(long v) {
    return (int) Math.min(Math.max(v, 0), NamedLimits.MAX_UINT32);
  }

  /** Whole seconds, rounded up: Envoy reads only {@code seconds}, so 0.4 s must not read 0. */
  static long ceilSeconds(long nanos) {
    return dev.tally.http.RateLimitFields.ceilSeconds(Math.max(0, nanos));
  }

  private static boolean nearer(NamedLimits.Status a, NamedLimits.Status b) {
    return a.code() != b.code() ? a.code() == Code.OVER_LIMIT : a.remaining() < b.remaining();
  }

  private static boolean cancelled(StreamObserver<?> observer) {
    return observer instanceof ServerCallStreamObserver<?> s && s.isCancelled();
  }

  private void fail(StreamObserver<RateLimitResponse> observer, long start, Status status) {
    time(status.getCode().name().toLowerCase(Locale.ROOT), start);
    if (!cancelled(observer)) {
      try {
        observer.onError(status.asRuntimeException());
      } catch (StatusRuntimeException gone) {
        // cancelled meanwhile
      }
    }
  }

  private static Status status(Throwable e) {
    Status known = e instanceof StoreTimeoutException ? Status.DEADLINE_EXCEEDED
        : e instanceof StoreException ? Status.UNAVAILABLE
        : e instanceof IllegalArgumentException ? Status.INVALID_ARGUMENT
        : e instanceof TallyException ? Status.FAILED_PRECONDITION // a counter's name, a reused id...
        : null;
    if (known != null) {
      return known.withDescription(e.getMessage());
    }
    LOG.log(Level.ERROR, "ShouldRateLimit failed", e);
    return Status.INTERNAL.withDescription("internal error ("
        + e.getClass().getSimpleName() + "); the server log has the details");
  }

  private void time(String code, long start) {
    if (registry == null) {
      return;
    }
    Timer t = timers.get(code);
    if (t == null) {
      t = timers.computeIfAbsent(code, c -> Timer.builder("tally.rls.requests")
          .description("Envoy ShouldRateLimit calls, by outcome")
          .tags("outcome", c)
          .publishPercentileHistogram()
          .register(registry));
    }
    t.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
  }
}
