package dev.tally.server.http;

import static dev.tally.server.envoy.RlsMessages.d;
import static dev.tally.server.envoy.RlsMessages.request;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.NamedLimits;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * envoyproxy/ratelimit's own example rules directory ({@code examples/ratelimit/config}, copied
 * unchanged into the test resources) served by {@code tally serve --rules DIR}, and called as
 * Envoy calls it for the routes of that project's {@code examples/envoy/proxy.yaml}: each route's
 * descriptors, in the order and with the outcomes its integration scripts
 * ({@code integration-test/scripts}) expect. An outcome there is Envoy's: OVER_LIMIT is a 429.
 */
class UpstreamExampleRulesIT {
  static final Path CONFIG = Path.of("src/test/resources/envoyproxy-ratelimit/examples/ratelimit/config");

  /** Per-minute windows on the wall clock: start where a whole scenario fits before the next minute. */
  static void awayFromTheEndOfAMinute() throws InterruptedException {
    long second = Instant.now().getEpochSecond() % 60;
    if (second >= 40) {
      Thread.sleep((61 - second) * 1000);
    }
  }

  static Code call(RateLimitServiceGrpc.RateLimitServiceBlockingStub rls, Descriptor... ds) {
    return rls.shouldRateLimit(request("rl", 0, ds)).getOverallCode();
  }

  @Test
  void theExampleRoutesAreLimitedAsUpstreamLimitsThem() throws Exception {
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--rules",
        CONFIG.toAbsolutePath().toString(), "--grpc-port", "0")) {
      int port = GrpcTlsIT.grpcPort(server);
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext()
          .build();
      try {
        var rls = RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
        awayFromTheEndOfAMinute();

        // trigger-ratelimit.sh: /twoheader with foo and baz, (foo: *), (baz: not-so-shady) 3/min
        Descriptor notSoShady = d("foo", "pelle", "baz", "not-so-shady");
        for (int i = 0; i < 3; i++) {
          assertThat(call(rls, notSoShady)).as("call %d", i + 1).isEqualTo(Code.OK);
        }
        assertThat(call(rls, notSoShady)).isEqualTo(Code.OVER_LIMIT);

        // trigger-shadow-mode-key.sh: (baz: shady) is in shadow mode, never refused
        Descriptor shady = d("foo", "pelle", "baz", "shady");
        for (int i = 0; i < 6; i++) {
          assertThat(call(rls, shady)).as("call %d", i + 1).isEqualTo(Code.OK);
        }
        RateLimitResponse lastShady = rls.shouldRateLimit(request("rl", 0, shady));
        assertThat(lastShady.getStatuses(0).getCode()).as("the status still says so")
            .isEqualTo(Code.OVER_LIMIT);

        // replaces.sh, in its order
        Descriptor banned = d("foo", "bkthomps", "bar", "banned");
        assertThat(call(rls, banned)).isEqualTo(Code.OVER_LIMIT); // 0 per minute
        assertThat(call(rls, banned, d("source_cluster", "proxy", "destination_cluster", "mock")))
            .isEqualTo(Code.OVER_LIMIT);
        Descriptor override = d("source_cluster", "proxy", "destination_cluster", "override");
        assertThat(call(rls, banned, override)).isEqualTo(Code.OK); // replaces banned_limit: 2/min
        assertThat(call(rls, banned, override)).isEqualTo(Code.OK);
        assertThat(call(rls, banned, override)).isEqualTo(Code.OVER_LIMIT);

        Descriptor myFoo = d("foo", "my_foo", "bar", "bkthomps");
        Descriptor toBkthomps = d("source_cluster", "proxy", "destination_cluster", "bkthomps");
        assertThat(call(rls, myFoo, toBkthomps)).isEqualTo(Code.OK);
        assertThat(call(rls, myFoo, toBkthomps)).isEqualTo(Code.OK);
        assertThat(call(rls, myFoo, toBkthomps)).isEqualTo(Code.OVER_LIMIT);
        Descriptor notBkthomps = d("source_cluster", "proxy", "destination_cluster", "not_bkthomps");
        assertThat(call(rls, myFoo, notBkthomps)).as("bkthomps itself was untouched: 1/min")
            .isEqualTo(Code.OK);
        assertThat(call(rls, myFoo, notBkthomps)).isEqualTo(Code.OVER_LIMIT);
        assertThat(call(rls, myFoo, toBkthomps)).isEqualTo(Code.OVER_LIMIT);

        Descriptor fake = d("source_cluster", "proxy", "destination_cluster", "fake");
        Descriptor account = d("category", "account");
        for (int i = 0; i < 4; i++) { // (category: account) replaces bkthomps and fake_name: 4/min
          assertThat(call(rls, myFoo, fake, account)).as("call %d", i + 1).isEqualTo(Code.OK);
        }
        assertThat(call(rls, myFoo, fake, account)).isEqualTo(Code.OVER_LIMIT);
        Descriptor foo2 = d("foo", "foo_2", "bar", "bkthomps");
        assertThat(call(rls, foo2)).isEqualTo(Code.OK);
        assertThat(call(rls, foo2)).isEqualTo(Code.OVER_LIMIT);
        Descriptor foo3 = d("foo", "foo_3", "bar", "bar_3");
        assertThat(call(rls, foo3, fake)).isEqualTo(Code.OK); // fake_name: 2/min, untouched so far
        assertThat(call(rls, foo3, fake)).isEqualTo(Code.OK);
        assertThat(call(rls, foo3, fake)).isEqualTo(Code.OVER_LIMIT);
        assertThat(call(rls, myFoo, fake, account)).isEqualTo(Code.OVER_LIMIT);

        // /quota: (service: service_1) 1/min and (service: service_2) 2/min, both in quota mode:
        // the request passes while one of them has room
        Descriptor s1 = d("service", "service_1");
        Descriptor s2 = d("service", "service_2");
        assertThat(call(rls, s1, s2)).isEqualTo(Code.OK);
        assertThat(call(rls, s1, s2)).isEqualTo(Code.OK);
        assertThat(call(rls, s1, s2)).isEqualTo(Code.OVER_LIMIT);

        // /unspec: 2/min (detailed_metric only changes upstream's stats)
        assertThat(call(rls, d("unspec", "a"))).isEqualTo(Code.OK);
        assertThat(call(rls, d("unspec", "a"))).isEqualTo(Code.OK);
        assertThat(call(rls, d("unspec", "a"))).isEqualTo(Code.OVER_LIMIT);

        // (foo: *), (bay: *) is unlimited; (qux) too
        RateLimitResponse bay = rls.shouldRateLimit(request("rl", 0, d("foo", "x", "bay", "y"),
            d("qux", "z")));
        assertThat(bay.getOverallCode()).isEqualTo(Code.OK);
        for (RateLimitResponse.DescriptorStatus s : bay.getStatusesList()) {
          assertThat(s.hasCurrentLimit()).isFalse();
          assertThat(Integer.toUnsignedLong(s.getLimitRemaining())).isEqualTo(NamedLimits.MAX_UINT32);
        }

        // config.yaml: domain mongo_cps, 500 per second per database
        RateLimitResponse users = rls.shouldRateLimit(request("mongo_cps", 0,
            d("database", "users"), d("database", "other")));
        assertThat(users.getOverallCode()).isEqualTo(Code.OK);
        assertThat(users.getStatuses(0).getCurrentLimit()).isEqualTo(RateLimit.newBuilder()
            .setRequestsPerUnit(500).setUnit(RateLimit.Unit.SECOND).build());
        assertThat(users.getStatuses(0).getLimitRemaining()).isEqualTo(499);
        assertThat(users.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(1);
        assertThat(users.getStatuses(0).getDurationUntilReset().getNanos()).isZero();
        assertThat(users.getStatuses(1).hasCurrentLimit()).isFalse();
        assertThat(server.stderr()).doesNotContain("SEVERE");
      } finally {
        channel.shutdownNow();
      }
    }
  }
}
