package dev.tally.server.http;

import static dev.tally.server.envoy.RlsMessages.d;
import static dev.tally.server.envoy.RlsMessages.request;
import static dev.tally.server.envoy.RlsMessages.withHits;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.tally.server.envoy.RlsMessages;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.Unit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc.RateLimitServiceBlockingStub;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally serve --rules DIR --grpc-port 0} called as Envoy calls it, through a client
 * generated from Envoy's official {@code rls.proto}: each field Envoy sends, and each answer Envoy
 * reads. Envoy's default {@code failure_mode_deny: false} lets through any request whose check
 * ends in an error status, so no case here may end in one except a message that does not parse.
 */
class EnvoyProtocolIT {
  static final String RULES = """
      domain: acc
      descriptors:
        - key: path
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: quota
          rate_limit: {unit: year, requests_per_unit: 5}
        - key: per_second
          rate_limit: {unit: second, requests_per_unit: 1000}
        - key: file
          value: bar*b
          rate_limit: {unit: year, requests_per_unit: 1}
        - key: weekly
          rate_limit: {unit: week, requests_per_unit: 2}
      """;

  @TempDir static Path dir;
  static ServerProcess server;
  static ManagedChannel channel;

  @BeforeAll
  static void start() throws Exception {
    Path rules = Files.createDirectories(dir.resolve("rules"));
    Files.writeString(rules.resolve("acc.yaml"), RULES);
    server = ServerProcess.start("--store", "mem:", "--rules", rules.toString(), "--grpc-port", "0");
    channel = NettyChannelBuilder.forAddress("127.0.0.1", GrpcTlsIT.grpcPort(server)).usePlaintext()
        .build();
  }

  @AfterAll
  static void stop() {
    channel.shutdownNow();
    server.close();
  }

  static RateLimitServiceBlockingStub rls() {
    return RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
  }

  static RateLimitResponse call(String domain, Descriptor... ds) {
    return rls().shouldRateLimit(request(domain, 0, ds));
  }

  @Test
  void aLongValueBesideAnAddressIsLimitedLikeAnyOtherAndNeverAnError() throws Exception {
    UpstreamExampleRulesIT.awayFromTheEndOfAMinute();
    Descriptor address = d("remote_address", "10.1.2.3");
    Descriptor path = d("path", "/api/" + "a".repeat(1_100));
    RateLimitResponse first = call("acc", address, path);
    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatusesList()).extracting(DescriptorStatus::getCode)
        .containsExactly(Code.OK, Code.OK);
    RateLimitResponse second = call("acc", address, path);
    assertThat(second.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(second.getStatusesList()).extracting(DescriptorStatus::getCode)
        .containsExactly(Code.OVER_LIMIT, Code.OVER_LIMIT);
    // each is limited on its own: the long path with another address, the address with another path
    assertThat(call("acc", d("remote_address", "10.1.2.4"), path).getStatuses(1).getCode())
        .isEqualTo(Code.OVER_LIMIT);
    assertThat(call("acc", address, d("path", "/api/b")).getStatuses(0).getCode())
        .isEqualTo(Code.OVER_LIMIT);
  }

  @Test
  void aDescriptorsOwnHitsAddendZeroChecksWithoutCountingAndThreeTakesThree() {
    Descriptor q = d("quota", "hits");
    for (int i = 0; i < 3; i++) {
      RateLimitResponse check = call("acc", withHits(q, 0));
      assertThat(check.getOverallCode()).isEqualTo(Code.OK);
      assertThat(check.getStatuses(0).getLimitRemaining()).as("check %d", i).isEqualTo(5);
    }
    assertThat(call("acc", withHits(q, 3)).getStatuses(0).getLimitRemaining()).isEqualTo(2);
    assertThat(call("acc", withHits(q, 0)).getStatuses(0).getLimitRemaining()).isEqualTo(2);
    // the request's own hits_addend is what a descriptor without one takes
    assertThat(rls().shouldRateLimit(request("acc", 2, q, withHits(d("quota", "other"), 1)))
        .getStatusesList()).extracting(DescriptorStatus::getLimitRemaining).containsExactly(0, 4);
    // over the limit: OVER_LIMIT carries 0 remaining, and took nothing
    RateLimitResponse over = call("acc", withHits(q, 3));
    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getLimitRemaining()).isZero();
  }

  @Test
  void aLimitOverrideAppliesOnAKnownDomainOnly() {
    Descriptor o = new Descriptor(List.of(new Entry("remote_address", "10.9.9.9")),
        new Descriptor.LimitOverride(1, Unit.HOUR));
    for (int i = 0; i < 3; i++) {
      RateLimitResponse unknown = call("nowhere", o);
      assertThat(unknown.getOverallCode()).isEqualTo(Code.OK);
      assertThat(unknown.getStatuses(0).hasCurrentLimit()).isFalse();
    }
    RateLimitResponse first = call("acc", o);
    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatuses(0).getCurrentLimit()).isEqualTo(RateLimit.newBuilder()
        .setRequestsPerUnit(1).setUnit(RateLimit.Unit.HOUR).build());
    RateLimitResponse over = call("acc", o);
    assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(over.getStatuses(0).getLimitRemaining()).isZero();
  }

  @Test
  void aPerSecondLimitResetsInWholeSeconds() {
    DescriptorStatus s = call("acc", d("per_second", "x")).getStatuses(0);
    assertThat(s.getCurrentLimit().getUnit()).isEqualTo(RateLimit.Unit.SECOND);
    assertThat(s.getDurationUntilReset().getSeconds()).isEqualTo(1);
    assertThat(s.getDurationUntilReset().getNanos()).isZero();
  }

  @Test
  void aMessageThatDoesNotParseIsInternal() {
    StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class,
        () -> ClientCalls.blockingUnaryCall(channel, RlsMessages.rawMethod(),
            CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS),
            new byte[] {0x12, 0x7f, 0x01})); // descriptors: a length past the end
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL);
    // and the connection still serves
    assertThat(call("acc", d("per_second", "y")).getOverallCode()).isEqualTo(Code.OK);
  }

  @Test
  void aWildcardInTheMiddleOfAValueMatches() {
    DescriptorStatus match = call("acc", d("file", "barxyzb")).getStatuses(0);
    assertThat(match.getCurrentLimit().getRequestsPerUnit()).isEqualTo(1);
    assertThat(call("acc", d("file", "barxyzb")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(call("acc", d("file", "barxyz")).getStatuses(0).hasCurrentLimit()).isFalse();
    assertThat(call("acc", d("file", "foobarb")).getStatuses(0).hasCurrentLimit()).isFalse();
  }

  @Test
  void aWeeklyLimitIsAWeek() {
    DescriptorStatus s = call("acc", d("weekly", "u")).getStatuses(0);
    assertThat(s.getCurrentLimit().getUnit()).isEqualTo(RateLimit.Unit.WEEK);
    assertThat(s.getCurrentLimit().getRequestsPerUnit()).isEqualTo(2);
    assertThat(s.getDurationUntilReset().getSeconds()).isBetween(1L, 7 * 24 * 3600L);
  }
}
