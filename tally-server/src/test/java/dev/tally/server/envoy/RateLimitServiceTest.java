package dev.tally.server.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static dev.tally.server.envoy.RlsMessages.d;
import static dev.tally.server.envoy.RlsMessages.headers;
import static dev.tally.server.envoy.RlsMessages.limit;
import static dev.tally.server.envoy.RlsMessages.request;
import static dev.tally.server.envoy.RlsMessages.status;

import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.Rule;
import dev.tally.server.ratelimit.Rules;
import dev.tally.server.ratelimit.Unit;
import dev.tally.tck.ManualTimeSource;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Envoy's {@code ShouldRateLimit} over real gRPC (grpc-java client and server on loopback), on
 * the memory store and on the file store, with time driven by hand.
 */
class RateLimitServiceTest {
  /** A minute boundary: every window of these rules starts here. */
  static final Instant START = Instant.parse("2026-11-08T00:00:00Z");

  static final String RULES = """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 2}
        - key: remote_address
          value: 50.0.0.5
          rate_limit: {unit: minute, requests_per_unit: 0}
        - key: path
          value: /api/*
          rate_limit: {unit: hour, requests_per_unit: 3}
        - key: ldap
          rate_limit: {unlimited: true}
        - key: message_type
          value: marketing
          descriptors:
            - key: to_number
              rate_limit: {unit: day, requests_per_unit: 2}
        - key: to_number
          rate_limit: {unit: day, requests_per_unit: 3}
        - key: canary
          shadow_mode: true
          rate_limit: {unit: minute, requests_per_unit: 1}
        - key: quota
          rate_limit: {unit: minute, requests_per_unit: 10}
        - key: key_1
          value: value_1
          descriptors:
            - key: user
              rate_limit: {name: specific_limit, unit: minute, requests_per_unit: 1}
        - key: key_2
          value: value_2
          descriptors:
            - key: user
              rate_limit:
                replaces: [{name: specific_limit}]
                unit: minute
                requests_per_unit: 5
      """;

  /** A store, rules files, the gRPC endpoint over them and a client channel. */
  static final class Env implements AutoCloseable {
    final ManualTimeSource clock = new ManualTimeSource(START);
    final Path rulesFile;
    final Tally tally;
    final Rules rules;
    final GrpcEndpoint endpoint;
    final ManagedChannel channel;
    final EventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());

    Env(String store, Path dir, String yaml, String token) throws Exception {
      this(store, dir, yaml, token, false);
    }

    Env(String store, Path dir, String yaml, String token, boolean allOrNothing) throws Exception {
      String uri = store.equals("file:") ? "file:" + dir.resolve("data") : store;
      tally = Tally.builder(uri).timeSource(clock).build();
      Path rulesDir = Files.createDirectories(dir.resolve("rules"));
      rulesFile = rulesDir.resolve("edge.yaml");
      Files.writeString(rulesFile, yaml);
      rules = Rules.load(List.of(rulesDir));
      endpoint = GrpcEndpoint.start(new NamedLimits(tally, rules, allOrNothing),
          new GrpcEndpoint.Loops(loops, loops, NioServerSocketChannel.class),
          new GrpcEndpoint.Options(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
              null, h -> token == null || ("Bearer " + token).equals(h), 64 * 1024, true, 100, 10),
          null);
      channel = NettyChannelBuilder.forAddress("127.0.0.1", endpoint.address().getPort())
          .usePlaintext().build();
    }

    RateLimitResponse call(long hits, Descriptor... descriptors) {
      return stub().shouldRateLimit(request("edge", hits, descriptors));
    }

    RateLimitResponse call(Descriptor... descriptors) {
      return call(0, descriptors);
    }

    RateLimitServiceGrpc.RateLimitServiceBlockingStub stub() {
      return RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
      channel.shutdownNow();
      endpoint.close(Duration.ofSeconds(5));
      loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
      rules.close();
      tally.close();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void eachDescriptorGetsItsOwnStatus(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      RateLimitResponse r = env.call(d("remote_address", "10.0.0.1"), d("ldap", "cn=x"),
          d("nothing", "matches"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatusesList()).containsExactly(
          status(Code.OK, limit(2, Unit.MINUTE), 1, Duration.ofMinutes(1)),
          status(Code.OK, null, NamedLimits.MAX_UINT32, null),
          status(Code.OK, null, 0, null));
      assertThat(headers(r)).isEqualTo(Map.of("x-ratelimit-limit", "2",
          "x-ratelimit-remaining", "1", "x-ratelimit-reset", "60"));

      env.clock.advance(Duration.ofSeconds(20));
      assertThat(env.call(d("remote_address", "10.0.0.1")).getStatuses(0))
          .isEqualTo(status(Code.OK, limit(2, Unit.MINUTE), 0, Duration.ofSeconds(40)));
      RateLimitResponse over = env.call(d("remote_address", "10.0.0.1"), d("ldap", "cn=x"));
      assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(over.getStatuses(0))
          .isEqualTo(status(Code.OVER_LIMIT, limit(2, Unit.MINUTE), 0,
              Duration.ofSeconds(40)));
      assertThat(over.getStatuses(1).getCode()).isEqualTo(Code.OK);
      assertThat(headers(over)).containsEntry("x-ratelimit-remaining", "0")
          .containsEntry("x-ratelimit-reset", "40");
      // each remote address counts apart
      assertThat(env.call(d("remote_address", "10.0.0.2")).getOverallCode()).isEqualTo(Code.OK);

      env.clock.advance(Duration.ofSeconds(40)); // the next window
      assertThat(env.call(d("remote_address", "10.0.0.1")).getStatuses(0))
          .isEqualTo(status(Code.OK, limit(2, Unit.MINUTE), 1, Duration.ofMinutes(1)));
    }
  }

  /**
   * A descriptor's limiter reconfigured by hand to several limits answers with the deciding
   * limit's remaining, limit and its own reset, not the reset of the limiter as a whole.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aStoredLimiterOfSeveralLimitsReportsTheDecidingLimitsReset(String store, @TempDir Path dir)
      throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      env.tally.limiter("rls:edge:remote_address=10.0.0.9:2/minute", Limit.fixedWindow(2, Duration.ofMinutes(1)))
          .reconfigure(Limit.fixedWindow(2, Duration.ofMinutes(1)), Limit.fixedWindow(100, Duration.ofHours(1)));
      env.clock.advance(Duration.ofSeconds(20));
      assertThat(env.call(d("remote_address", "10.0.0.9")).getStatuses(0))
          .isEqualTo(status(Code.OK, limit(2, Unit.MINUTE), 1, Duration.ofSeconds(40)));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void nestedDescriptorsMatchAtTheirOwnDepth(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      Descriptor marketing = d("message_type", "marketing", "to_number", "2061111111");
      Descriptor number = d("to_number", "2061111111");
      RateLimitResponse r = env.call(marketing, number);
      assertThat(r.getStatuses(0).getCurrentLimit()).isEqualTo(limit(2, Unit.DAY));
      assertThat(r.getStatuses(0).getLimitRemaining()).isEqualTo(1);
      assertThat(r.getStatuses(0).getDurationUntilReset().getSeconds()).isEqualTo(Duration.ofDays(1).toSeconds());
      assertThat(r.getStatuses(1).getCurrentLimit()).isEqualTo(limit(3, Unit.DAY));
      assertThat(r.getStatuses(1).getLimitRemaining()).isEqualTo(2);
      env.call(marketing, number);
      RateLimitResponse third = env.call(marketing, number);
      assertThat(third.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(third.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(third.getStatuses(1).getCode()).isEqualTo(Code.OK);
      assertThat(third.getStatuses(1).getLimitRemaining()).isZero();
      // another number has its own count under both rules
      assertThat(env.call(d("message_type", "marketing", "to_number", "2062222222"))
          .getStatuses(0).getLimitRemaining()).isEqualTo(1);
      // the parent level alone has no limit
      assertThat(env.call(d("message_type", "marketing")).getStatuses(0).hasCurrentLimit())
          .isFalse();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aValueWinsOverTheKeyAloneAndZeroRefusesEverything(String store, @TempDir Path dir)
      throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      RateLimitResponse banned = env.call(d("remote_address", "50.0.0.5"));
      assertThat(banned.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(banned.getStatuses(0))
          .isEqualTo(status(Code.OVER_LIMIT, limit(0, Unit.MINUTE), 0,
              Duration.ofMinutes(1)));
      assertThat(env.call(d("remote_address", "50.0.0.6")).getStatuses(0).getCurrentLimit())
          .isEqualTo(limit(2, Unit.MINUTE));
      // a value ending in * matches by prefix
      assertThat(env.call(d("path", "/api/users")).getStatuses(0).getCurrentLimit())
          .isEqualTo(limit(3, Unit.HOUR));
      assertThat(env.call(d("path", "/static/x")).getStatuses(0).hasCurrentLimit()).isFalse();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void shadowModeCountsAndReportsButNeverRefuses(String store, @TempDir Path dir)
      throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      assertThat(env.call(d("canary", "a")).getStatuses(0).getCode()).isEqualTo(Code.OK);
      RateLimitResponse r = env.call(d("canary", "a"), d("remote_address", "10.0.0.9"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatuses(0))
          .isEqualTo(status(Code.OVER_LIMIT, limit(1, Unit.MINUTE), 0,
              Duration.ofMinutes(1)));
      // the headers tell the client about the limit that is enforced, not the shadow one
      assertThat(headers(r)).containsEntry("x-ratelimit-limit", "2");
      assertThat(headers(env.call(d("canary", "a")))).isEmpty();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void hitsAddendTakesThatManyAndZeroMeansOne(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      assertThat(env.call(4, d("quota", "q")).getStatuses(0).getLimitRemaining()).isEqualTo(6);
      assertThat(env.call(4, d("quota", "q")).getStatuses(0).getLimitRemaining()).isEqualTo(2);
      RateLimitResponse over = env.call(4, d("quota", "q"));
      assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(over.getStatuses(0).getLimitRemaining()).as("over its limit, nothing is left").isZero();
      // a refused request takes nothing: the two left are still there
      assertThat(env.call(0, d("quota", "q")).getStatuses(0).getLimitRemaining()).isEqualTo(1);
    }
  }

  /**
   * A descriptor's own {@code hits_addend} (Envoy's per-route cost) takes the place of the
   * request's; 0 checks without taking anything, as Envoy sends it for costs applied later.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aDescriptorsOwnHitsAddendReplacesTheRequestsAndZeroChecksWithoutTaking(String store, @TempDir Path dir)
      throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      Descriptor free = new Descriptor(List.of(new Entry("quota", "q")), null, 0L);
      Descriptor three = new Descriptor(List.of(new Entry("quota", "q")), null, 3L);
      for (int i = 0; i < 5; i++) {
        RateLimitResponse checked = env.call(4, free);
        assertThat(checked.getOverallCode()).isEqualTo(Code.OK);
        assertThat(checked.getStatuses(0).getLimitRemaining()).as("a check takes nothing").isEqualTo(10);
      }
      assertThat(env.call(4, three).getStatuses(0).getLimitRemaining()).isEqualTo(7);
      assertThat(env.call(4, d("quota", "q")).getStatuses(0).getLimitRemaining()).isEqualTo(3);
      assertThat(env.call(4, three).getStatuses(0).getLimitRemaining()).isZero();
      RateLimitResponse atTheLimit = env.call(4, free);
      assertThat(atTheLimit.getOverallCode()).as("a check at the limit is not over it").isEqualTo(Code.OK);
      assertThat(atTheLimit.getStatuses(0).getLimitRemaining()).isZero();
      assertThat(env.call(1, d("quota", "q")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    }
  }

  static final String CHARGED_RULES = """
      domain: edge
      descriptors:
        - key: tokens
          rate_limit: {unit: minute, requests_per_unit: 100, charge_hits: true}
        - key: path
          rate_limit: {unit: minute, requests_per_unit: 5}
      """;

  /**
   * A rule with {@code charge_hits}, as Envoy Gateway limits tokens per minute: the request checks
   * (its descriptor's hits_addend 0) and the response's cost arrives at stream end
   * ({@code apply_on_stream_done}). The cost lands whether or not it fits, into the window's debt,
   * and checks are refused until the window that holds the debt ends; each descriptor alone, and
   * all or nothing, where a spent check takes nothing from the request's other descriptors.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aCostSentAtStreamEndIsChargedWhetherOrNotItFitsAndRefusesLaterChecks(String store, @TempDir Path dir)
      throws Exception {
    for (boolean allOrNothing : new boolean[] {false, true}) {
      try (Env env = new Env(store, dir.resolve(String.valueOf(allOrNothing)), CHARGED_RULES, null, allOrNothing)) {
        Descriptor check = new Descriptor(List.of(new Entry("tokens", "user-7")), null, 0L);
        Descriptor path = d("path", "/chat");
        assertThat(env.call(check, path).getOverallCode()).isEqualTo(Code.OK);
        RateLimitResponse streamEnd = env.call(new Descriptor(check.entries(), null, 70L));
        assertThat(streamEnd.getOverallCode()).isEqualTo(Code.OK);
        assertThat(streamEnd.getStatuses(0).getLimitRemaining()).isEqualTo(30);
        assertThat(env.call(check, path).getOverallCode()).as("30 left: checked through").isEqualTo(Code.OK);

        RateLimitResponse beyond = env.call(new Descriptor(check.entries(), null, 150L));
        assertThat(beyond.getOverallCode()).as("a cost is never refused").isEqualTo(Code.OK);
        assertThat(beyond.getStatuses(0).getLimitRemaining()).isZero();
        RateLimitResponse spent = env.call(check, path);
        assertThat(spent.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
        assertThat(spent.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
        // what the path's limit holds, read by a check: all or nothing, the spent check took nothing
        Descriptor pathCheck = new Descriptor(path.entries(), null, 0L);
        assertThat(env.call(pathCheck).getStatuses(0).getLimitRemaining()).as("all or nothing: " + allOrNothing)
            .isEqualTo(allOrNothing ? 3 : 2);

        env.clock.advance(Duration.ofMinutes(1)); // the window ends, and its debt with it
        assertThat(env.call(check).getOverallCode()).isEqualTo(Code.OK);
        assertThat(env.call(check).getStatuses(0).getLimitRemaining()).isEqualTo(100);
      }
    }
  }

  /**
   * By default each descriptor counts alone, as envoyproxy/ratelimit counts: a request refused by
   * one descriptor still takes from the others that have room. All or nothing, it takes nothing
   * from any, and each status still says what its own limit has left and when it resets.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void allOrNothingARefusedRequestTakesNothingFromItsOtherDescriptors(String store, @TempDir Path dir)
      throws Exception {
    for (boolean allOrNothing : new boolean[] {false, true}) {
      try (Env env = new Env(store, dir.resolve(String.valueOf(allOrNothing)), RULES, null, allOrNothing)) {
        Descriptor address = d("remote_address", "10.0.0.1");
        Descriptor path = d("path", "/api/x");
        assertThat(env.call(address, path).getStatusesList()).containsExactly(
            status(Code.OK, limit(2, Unit.MINUTE), 1, Duration.ofMinutes(1)),
            status(Code.OK, limit(3, Unit.HOUR), 2, Duration.ofHours(1)));
        env.clock.advance(Duration.ofSeconds(20));
        assertThat(env.call(address, path).getOverallCode()).isEqualTo(Code.OK);
        for (int i = 0; i < 2; i++) {
          RateLimitResponse refused = env.call(address, path);
          assertThat(refused.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
          assertThat(refused.getStatusesList()).containsExactly(
              status(Code.OVER_LIMIT, limit(2, Unit.MINUTE), 0, Duration.ofSeconds(40)),
              allOrNothing
                  ? status(Code.OK, limit(3, Unit.HOUR), 1, Duration.ofMinutes(59).plusSeconds(40))
                  : i == 0 ? status(Code.OK, limit(3, Unit.HOUR), 0, Duration.ofMinutes(59).plusSeconds(40))
                  : status(Code.OVER_LIMIT, limit(3, Unit.HOUR), 0, Duration.ofMinutes(59).plusSeconds(40)));
        }
        // what the path's limiter holds, read by a check (hits_addend 0) that takes nothing
        Descriptor peek = new Descriptor(path.entries(), null, 0L);
        assertThat(env.call(peek).getStatuses(0).getLimitRemaining()).as("all or nothing: " + allOrNothing)
            .isEqualTo(allOrNothing ? 1 : 0);
        assertThat(env.call(path).getOverallCode()).isEqualTo(allOrNothing ? Code.OK : Code.OVER_LIMIT);
      }
    }
  }

  /**
   * All or nothing keeps hits_addend: the request's is taken from each descriptor at once, a
   * descriptor's own 0 checks without taking, and a limit of 0 refuses the request before anything
   * is taken; shadow mode still never refuses, and counts only when the request is granted.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void allOrNothingKeepsHitsAddendAndShadowMode(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null, true)) {
      Descriptor address = d("remote_address", "10.0.0.1");
      Descriptor path = d("path", "/api/x");
      Descriptor canary = d("canary", "c");
      RateLimitResponse two = env.call(2, address, path, canary);
      assertThat(two.getOverallCode()).isEqualTo(Code.OK);
      assertThat(two.getStatusesList()).extracting(s -> s.getLimitRemaining()).containsExactly(0, 1, 0);
      assertThat(two.getStatuses(2).getCode()).as("shadow mode counts 2 of its 1").isEqualTo(Code.OVER_LIMIT);

      Descriptor checkAddress = new Descriptor(address.entries(), null, 0L);
      RateLimitResponse checked = env.call(1, checkAddress, path);
      assertThat(checked.getOverallCode()).as("a check at the limit is not over it").isEqualTo(Code.OK);
      assertThat(checked.getStatusesList()).extracting(s -> s.getLimitRemaining()).containsExactly(0, 0);

      RateLimitResponse blocked = env.call(1, d("path", "/api/y"), d("remote_address", "50.0.0.5"));
      assertThat(blocked.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(blocked.getStatuses(0)).as("refused by the limit of 0: nothing taken")
          .isEqualTo(status(Code.OK, limit(3, Unit.HOUR), 3, Duration.ofHours(1)));

      env.clock.advance(Duration.ofMinutes(1)); // the address and the canary start again; the path does not
      RateLimitResponse refused = env.call(1, d("remote_address", "10.0.0.1"), path, d("canary", "d"));
      assertThat(refused.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(refused.getStatusesList()).extracting(s -> s.getLimitRemaining()).containsExactly(2, 0, 1);
      assertThat(env.call(new Descriptor(List.of(new Entry("canary", "d")), null, 0L)).getStatuses(0)
          .getLimitRemaining()).as("the refused request's shadow descriptor took nothing").isEqualTo(1);
    }
  }

  /**
   * More descriptors than the store decides in one joint decision (the file store: 255) are refused
   * OVER_LIMIT, never answered with an error that Envoy, failing open, would let through.
   */
  @org.junit.jupiter.api.Test
  void allOrNothingRefusesARequestOfMoreDescriptorsThanTheStoreDecidesAtOnce(@TempDir Path dir) throws Exception {
    try (Env env = new Env("file:", dir, RULES, null, true)) {
      Descriptor[] many = new Descriptor[300];
      for (int i = 0; i < many.length; i++) {
        many[i] = d("path", "/api/p" + i);
      }
      RateLimitResponse refused = env.call(1, many);
      assertThat(refused.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(refused.getStatusesList()).extracting(s -> s.getCode()).containsOnly(Code.OVER_LIMIT);
      assertThat(env.call(1, d("path", "/api/p0")).getStatuses(0).getLimitRemaining())
          .as("nothing was taken").isEqualTo(2);
    }
  }

  @org.junit.jupiter.api.Test
  void allOrNothingIsRefusedAtStartupOnRedisClusterWhereTheKeysAreInSeveralSlots() {
    assertThatThrownBy(() -> NamedLimits.requireJointDecisions("redis-cluster://127.0.0.1:7000"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Redis Cluster").hasMessageContaining("--rls-all-or-nothing");
    NamedLimits.requireJointDecisions("redis://127.0.0.1:6379");
  }

  /**
   * A value far longer than a limiter's name may be (a long path, a token) is limited like any
   * other: Envoy, failing open, lets through any request whose check is an error, so a value that
   * made the check fail would lift every limit of the request.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aLongValueIsLimitedLikeAnyOther(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      String path = "/api/" + "a".repeat(1_100);
      for (int i = 1; i <= 3; i++) {
        RateLimitResponse r = env.call(d("remote_address", "10.1.2." + i), d("path", path));
        assertThat(r.getOverallCode()).as("request %d", i).isEqualTo(Code.OK);
        assertThat(r.getStatuses(1).getLimitRemaining()).isEqualTo(3 - i);
      }
      RateLimitResponse over = env.call(d("remote_address", "10.1.2.9"), d("path", path));
      assertThat(over.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(over.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(over.getStatuses(0).getCode()).as("the other descriptor is still decided").isEqualTo(Code.OK);
      // another long value counts apart, and a value just over the bound too
      assertThat(env.call(d("path", "/api/" + "b".repeat(1_100))).getStatuses(0).getLimitRemaining()).isEqualTo(2);
      String edge = "/api/" + "c".repeat(NamedLimits.MAX_PART_BYTES);
      assertThat(env.call(d("path", edge)).getStatuses(0).getLimitRemaining()).isEqualTo(2);
      assertThat(env.call(d("path", edge)).getStatuses(0).getLimitRemaining()).isEqualTo(1);
      // many long entries: the name still fits
      Rule rule = env.rules.current().match("edge", List.of(new Entry("path", path)));
      List<Entry> many = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        many.add(new Entry("k" + "x".repeat(100) + i, "v" + i));
      }
      String name = NamedLimits.limiterName("edge", many, rule);
      assertThat(name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length).isLessThanOrEqualTo(1024);
      assertThat(name).startsWith("rls:edge:sha256-").endsWith(":3/hour");
    }
  }

  /**
   * Quota-mode descriptors (envoyproxy/ratelimit's {@code quota_mode}): a request passes while any
   * of its quotas has room, and is over only when every one is.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void aRequestPassesWhileOneOfItsQuotasHasRoom(String store, @TempDir Path dir) throws Exception {
    String rules = """
        domain: edge
        descriptors:
          - key: daily
            quota_mode: true
            rate_limit: {unit: day, requests_per_unit: 1}
          - key: monthly
            quota_mode: true
            rate_limit: {unit: month, requests_per_unit: 2}
          - key: files
            value: files/*
            share_threshold: true
            rate_limit: {unit: hour, requests_per_unit: 2}
        """;
    try (Env env = new Env(store, dir, rules, null)) {
      assertThat(env.call(d("daily", "u"), d("monthly", "u")).getOverallCode()).isEqualTo(Code.OK);
      RateLimitResponse second = env.call(d("daily", "u"), d("monthly", "u"));
      assertThat(second.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(second.getOverallCode()).as("the monthly quota still had room").isEqualTo(Code.OK);
      assertThat(env.call(d("daily", "u"), d("monthly", "u")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      // every file under files/ shares one count
      assertThat(env.call(d("files", "files/a")).getOverallCode()).isEqualTo(Code.OK);
      assertThat(env.call(d("files", "files/b")).getOverallCode()).isEqualTo(Code.OK);
      assertThat(env.call(d("files", "files/c")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    }
  }

  /**
   * HTTP/2 rapid reset (CVE-2023-44487): connections that open and cancel streams as fast as they
   * can, one after another, are each closed with ENHANCE_YOUR_CALM (past 100 resets in 10 s), the
   * log gets a line a minute rather than one per connection, and calls on another connection are
   * answered meanwhile within 50 ms at p99 (over at least 300 calls), though the server runs all
   * of it on one event loop.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void aConnectionResettingStreamsAsFastAsItCanIsClosed(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      int port = env.endpoint.address().getPort();
      for (int i = 0; i < 500; i++) { // warm: the JIT, the connection, and the flood's own path
        env.call(d("ldap", "warm"));
      }
      Flood first = flood(port);
      assertThat(first.closed()).as("%s", first).isTrue();
      assertThat(first.error()).as("GOAWAY's error (%s)", first).isEqualTo(ENHANCE_YOUR_CALM);
      List<Long> quiet = new ArrayList<>();
      for (int i = 0; i < 300; i++) { // the same calls without a flood, for comparison
        long t0 = System.nanoTime();
        env.call(d("ldap", "other"));
        quiet.add(System.nanoTime() - t0);
      }
      List<String> logged = java.util.Collections.synchronizedList(new ArrayList<>());
      java.util.logging.Handler handler = new java.util.logging.Handler() {
        @Override
        public void publish(java.util.logging.LogRecord r) {
          logged.add(r.getLoggerName() + ": " + r.getMessage());
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
      };
      java.util.logging.Logger serverLog = java.util.logging.Logger.getLogger("dev.tally.server");
      serverLog.addHandler(handler);
      ResetFloodLog.GRPC_TRANSPORT.addHandler(handler);
      AtomicBoolean flooding = new AtomicBoolean(true);
      List<Long> latencies = java.util.Collections.synchronizedList(new ArrayList<>());
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread meanwhile = new Thread(() -> {
        // bounded: stopped when the flood ends, at most 100,000 calls
        for (int i = 0; i < 100_000 && flooding.get(); i++) {
          long t0 = System.nanoTime();
          try {
            assertThat(env.call(d("ldap", "other")).getOverallCode()).isEqualTo(Code.OK);
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
            return;
          }
          latencies.add(System.nanoTime() - t0);
        }
      });
      meanwhile.start();
      int total = 0;
      int connections = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      try {
        // at least 5,000 resets, and on until 300 calls have been timed during the flood
        while ((total < 5_000 || latencies.size() < 300) && failure.get() == null
            && System.nanoTime() < deadline) {
          Flood f = flood(port);
          assertThat(f.closed()).as("flooding connection %d is closed (%s)", connections, f)
              .isTrue();
          assertThat(f.error()).as("GOAWAY's error (%s)", f).isEqualTo(ENHANCE_YOUR_CALM);
          total += f.sent();
          connections++;
        }
      } finally {
        flooding.set(false);
        meanwhile.join(30_000);
        serverLog.removeHandler(handler);
        ResetFloodLog.GRPC_TRANSPORT.removeHandler(handler);
      }
      // not a line per closed connection: at most one a minute, saying how many
      assertThat(logged).as("log lines during %d flooding connections", connections)
          .hasSizeLessThanOrEqualTo(1)
          .allMatch(line -> line.startsWith("dev.tally.server: closed {0} gRPC connection(s)"));
      assertThat(failure.get()).as("a call on another connection failed").isNull();
      List<Long> sorted = new ArrayList<>(latencies);
      assertThat(sorted).as("calls answered during the flood").hasSizeGreaterThanOrEqualTo(300);
      long p99 = TimeUnit.NANOSECONDS.toMillis(p99(sorted));
      long quietP99 = TimeUnit.NANOSECONDS.toMillis(p99(quiet));
      System.out.printf("rapid reset: p99 of %d calls during %d flooding connections (%d resets"
          + " sent) %d ms (without a flood: %d ms)%n", sorted.size(), connections, total, p99,
          quietP99);
      assertThat(p99).as("p99 (ms) of %d calls during %d flooding connections (without a flood:"
          + " %d ms)", sorted.size(), connections, quietP99).isLessThanOrEqualTo(50);
      assertThat(env.call(d("remote_address", "10.9.9.9")).getOverallCode()).isEqualTo(Code.OK);
    }
  }

  /** HTTP/2's error code for a peer that is generating excessive load. */
  static final long ENHANCE_YOUR_CALM = 0xb;

  static long p99(List<Long> nanos) {
    List<Long> sorted = new ArrayList<>(nanos);
    java.util.Collections.sort(sorted);
    return sorted.get((int) Math.ceil(sorted.size() * 0.99) - 1);
  }

  /**
   * What one flooding connection did: resets written (into the socket, whose buffers take all
   * of them: the server reads them as it can), the error code of the server's GOAWAY (-1: none
   * read) and whether the server closed the connection.
   */
  record Flood(int sent, long error, boolean closed) {
    /** The most resets one connection tries to send. */
    static final int MAX = 1_000;

    /**
     * What a flooding connection sends, encoded once so that the flood costs this JVM little
     * (it shares the cores with the server under test): the preface, SETTINGS, then HEADERS and
     * RST_STREAM on streams 1, 3, 5... {@code ENDS[i]} is where the {@code i}th reset ends.
     */
    static final byte[] BYTES;
    static final int[] ENDS = new int[MAX];

    static {
      io.netty.channel.embedded.EmbeddedChannel frames = new io.netty.channel.embedded.EmbeddedChannel(
          new io.netty.channel.ChannelInboundHandlerAdapter());
      io.netty.channel.ChannelHandlerContext ctx = frames.pipeline().firstContext();
      io.netty.handler.codec.http2.DefaultHttp2FrameWriter writer = new io.netty.handler.codec.http2.DefaultHttp2FrameWriter();
      Http2Headers headers = new io.netty.handler.codec.http2.DefaultHttp2Headers()
          .method("POST").scheme("http").authority("127.0.0.1")
          .path("/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")
          .set("content-type", "application/grpc").set("te", "trailers");
      java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
      out.writeBytes(io.netty.buffer.ByteBufUtil.getBytes(io.netty.handler.codec.http2.Http2CodecUtil.connectionPrefaceBuf()));
      writer.writeSettings(ctx, new io.netty.handler.codec.http2.Http2Settings(), ctx.newPromise());
      drain(frames, out);
      for (int i = 0, stream = 1; i < MAX; i++, stream += 2) {
        writer.writeHeaders(ctx, stream, headers, 0, false, ctx.newPromise());
        writer.writeRstStream(ctx, stream, io.netty.handler.codec.http2.Http2Error.CANCEL.code(), ctx.newPromise());
        drain(frames, out);
        ENDS[i] = out.size();
      }
      frames.finishAndReleaseAll();
      BYTES = out.toByteArray();
    }

    private static void drain(io.netty.channel.embedded.EmbeddedChannel frames, java.io.ByteArrayOutputStream out) {
      frames.flush();
      for (Object o; (o = frames.readOutbound()) != null; ) {
        io.netty.buffer.ByteBuf b = (io.netty.buffer.ByteBuf) o;
        out.writeBytes(io.netty.buffer.ByteBufUtil.getBytes(b));
        b.release();
      }
    }
  }

  /**
   * HEADERS then RST_STREAM on new streams, up to {@link Flood#MAX} times, on a new connection;
   * then what the server answered, up to its GOAWAY.
   */
  static Flood flood(int port) throws Exception {
    try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
      socket.setSoTimeout(10_000);
      java.io.OutputStream out = socket.getOutputStream();
      int written = 0;
      try {
        while (written < Flood.BYTES.length) { // in pieces, to know how many resets got out
          int n = Math.min(16 * 1024, Flood.BYTES.length - written);
          out.write(Flood.BYTES, written, n);
          written += n;
        }
      } catch (java.io.IOException gone) {
        // the server closed the connection under the flood
      }
      int at = java.util.Arrays.binarySearch(Flood.ENDS, written);
      int sent = at >= 0 ? at + 1 : -at - 1;
      // the server's frames, up to its GOAWAY
      java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
      try {
        while (true) {
          int length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
          int type = in.readUnsignedByte();
          in.readUnsignedByte(); // flags
          in.readInt(); // stream
          if (type == 7) { // GOAWAY: the last stream taken (not told on an error), the error
            in.readInt();
            long error = in.readInt() & 0xffffffffL;
            in.skipNBytes(length - 8);
            return new Flood(sent, error, closes(in));
          }
          in.skipNBytes(length);
        }
      } catch (java.net.SocketTimeoutException stillOpen) {
        return new Flood(sent, -1, false);
      } catch (java.io.IOException gone) { // closed without a GOAWAY read
        return new Flood(sent, -1, true);
      }
    }
  }

  /** Whether the connection ends (within the socket's timeout). */
  private static boolean closes(java.io.InputStream in) {
    try {
      while (in.read() >= 0) {
        // whatever follows the GOAWAY, then the end
      }
      return true;
    } catch (java.net.SocketTimeoutException stillOpen) {
      return false;
    } catch (java.io.IOException reset) {
      return true;
    }
  }

  /**
   * A descriptor whose limiter cannot decide (its name holds a counter) is refused on its own,
   * and the request's other descriptors are decided: an error for the whole request is what
   * Envoy, failing open, lets through.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void aDescriptorThatCannotBeDecidedIsRefusedAlone(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      env.tally.counters().incr("rls:edge:remote_address=10.6.6.6:2/minute");
      RateLimitResponse r = env.call(d("remote_address", "10.6.6.6"), d("quota", "q"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(r.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(r.getStatuses(0).getLimitRemaining()).isZero();
      assertThat(r.getStatuses(1).getCode()).isEqualTo(Code.OK);
      assertThat(r.getStatuses(1).getLimitRemaining()).isEqualTo(9);
    }
  }

  /** A limit Envoy sends for a domain no rules file defines is not enforced: that domain is OK throughout. */
  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void aLimitOverrideOnAnUnknownDomainIsNotEnforced(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      Descriptor o = new Descriptor(List.of(new Entry("remote_address", "10.1.1.1")),
          new Descriptor.LimitOverride(1, Unit.HOUR));
      for (int i = 0; i < 3; i++) {
        RateLimitResponse r = env.stub().shouldRateLimit(request("elsewhere", 0, o));
        assertThat(r.getOverallCode()).isEqualTo(Code.OK);
        assertThat(r.getStatuses(0).hasCurrentLimit()).isFalse();
      }
    }
  }

  /** Envoy reads whole seconds of a reset: a part of a second left counts as a whole one. */
  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void theResetIsInWholeSecondsRoundedUp(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      env.clock.advance(Duration.ofMillis(59_500));
      RateLimitResponse r = env.call(d("remote_address", "10.0.0.1"));
      assertThat(r.getStatuses(0).getDurationUntilReset()).isEqualTo(com.google.protobuf.Duration.newBuilder().setSeconds(1).build());
      assertThat(headers(r)).containsEntry("x-ratelimit-reset", "1");
    }
  }

  /** A message that does not parse is INTERNAL, as gRPC's generated marshallers answer it. */
  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void anUnparsableMessageIsInternal(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      MethodDescriptor<byte[], byte[]> raw = RateLimitServiceGrpc.getShouldRateLimitMethod().toBuilder(new RawBytes(), new RawBytes()).build();
      assertThatThrownBy(() -> ClientCalls.blockingUnaryCall(env.channel, raw, CallOptions.DEFAULT,
          new byte[] {0x12, 0x7f, 0x01})) // descriptors: a length past the end
          .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INTERNAL));
    }
  }

  /** Bytes as they are, to send a message no valid request encodes to. */
  private static final class RawBytes implements MethodDescriptor.Marshaller<byte[]> {
    @Override
    public java.io.InputStream stream(byte[] value) {
      return new java.io.ByteArrayInputStream(value);
    }

    @Override
    public byte[] parse(java.io.InputStream stream) {
      try {
        return stream.readAllBytes();
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aLimitThatReplacesAnotherLeavesItUnchecked(String store, @TempDir Path dir)
      throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      Descriptor specific = d("key_1", "value_1", "user", "bk");
      Descriptor replacing = d("key_2", "value_2", "user", "bk");
      for (int i = 0; i < 3; i++) {
        RateLimitResponse r = env.call(specific, replacing);
        assertThat(r.getOverallCode()).isEqualTo(Code.OK);
        assertThat(r.getStatuses(0).hasCurrentLimit()).isFalse();
        assertThat(r.getStatuses(1).getLimitRemaining()).isEqualTo(4 - i);
      }
      // alone, the replaced limit applies, and it was not touched meanwhile
      assertThat(env.call(specific).getStatuses(0).getLimitRemaining()).isZero();
      assertThat(env.call(specific).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aLimitOverrideFromEnvoyReplacesTheRules(String store, @TempDir Path dir) throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      Descriptor o = new Descriptor(List.of(new Entry("remote_address", "10.1.1.1")),
          new Descriptor.LimitOverride(1, Unit.HOUR));
      assertThat(env.call(o).getStatuses(0))
          .isEqualTo(status(Code.OK, limit(1, Unit.HOUR), 0, Duration.ofHours(1)));
      assertThat(env.call(o).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      // the rules' own limit for that address is another count
      assertThat(env.call(d("remote_address", "10.1.1.1")).getStatuses(0).getLimitRemaining())
          .isEqualTo(1);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void badRequestsAreRefusedAndAnUnknownDomainAnswersOk(String store, @TempDir Path dir)
      throws Exception {
    try (Env env = new Env(store, dir, RULES, null)) {
      assertThatThrownBy(() -> env.stub().shouldRateLimit(request("", 0, d("a", "b"))))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(e.getStatus().getDescription()).contains("no domain");
          });
      assertThatThrownBy(() -> env.call())
          .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT));
      RateLimitResponse unknown = env.stub().shouldRateLimit(request("elsewhere", 0, d("remote_address", "1")));
      assertThat(unknown.getOverallCode()).isEqualTo(Code.OK);
      assertThat(unknown.getStatuses(0).hasCurrentLimit()).isFalse();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:"})
  void withATokenEveryCallMustCarryIt(String store, @TempDir Path dir) throws Exception {
    String token = "0123456789abcdef0123";
    try (Env env = new Env(store, dir, RULES, token)) {
      assertThatThrownBy(() -> env.call(d("remote_address", "1")))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e ->
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
      Metadata m = new Metadata();
      m.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER),
          "Bearer " + token);
      io.grpc.Channel withToken = io.grpc.ClientInterceptors.intercept(env.channel,
          MetadataUtils.newAttachHeadersInterceptor(m));
      RateLimitResponse r = RateLimitServiceGrpc.newBlockingStub(withToken)
          .shouldRateLimit(request("edge", 0, d("remote_address", "1")));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatuses(0).getLimitRemaining()).isEqualTo(1);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mem:", "file:"})
  void aReloadUnderLoadFailsNoCallAndTheNewLimitTakesEffect(String store, @TempDir Path dir)
      throws Exception {
    String before = "domain: edge\ndescriptors:\n  - key: tenant\n    rate_limit: {unit: minute,"
        + " requests_per_unit: 5}\n";
    String after = before.replace("requests_per_unit: 5", "requests_per_unit: 100000");
    try (Env env = new Env(store, dir, before, null)) {
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger calls = new AtomicInteger();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Set<Long> limitsSeen = ConcurrentHashMap.newKeySet();
      List<Thread> load = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        Thread thread = new Thread(() -> {
          // bounded: at most 20,000 calls per thread, and the test stops it far sooner
          for (int i = 0; i < 20_000 && !stop.get(); i++) {
            try {
              RateLimitResponse r = env.call(d("tenant", "acme"));
              limitsSeen.add((long) r.getStatuses(0).getCurrentLimit().getRequestsPerUnit());
              calls.incrementAndGet();
            } catch (RuntimeException e) {
              failure.compareAndSet(null, e);
              calls.incrementAndGet();
            }
          }
        });
        thread.start();
        load.add(thread);
      }
      awaitCalls(calls, 300);
      Files.writeString(env.rulesFile, "domain: edge\ndescriptors:\n  - key: tenant\n"
          + "    rate_limit: {unit: minute}\n"); // refused: the old rules stay
      assertThat(env.rules.reload()).isEqualTo(Rules.Outcome.REFUSED);
      awaitCalls(calls, calls.get() + 300);
      assertThat(limitsSeen).containsExactly(5L);
      Files.writeString(env.rulesFile, after);
      assertThat(env.rules.reload()).isEqualTo(Rules.Outcome.APPLIED);
      awaitCalls(calls, calls.get() + 300);
      stop.set(true);
      for (Thread thread : load) {
        thread.join(30_000);
      }
      assertThat(failure.get()).as("a call failed during the reload").isNull();
      assertThat(limitsSeen).containsExactlyInAnyOrder(5L, 100_000L);
      RateLimitResponse now = env.call(d("tenant", "acme"));
      assertThat(now.getOverallCode()).isEqualTo(Code.OK);
      assertThat(now.getStatuses(0).getCurrentLimit()).isEqualTo(limit(100_000, Unit.MINUTE));
    }
  }

  /** Waits until {@code n} calls are done (bounded: the load threads stop by themselves). */
  static void awaitCalls(AtomicInteger calls, int n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (calls.get() < n && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(calls.get()).as("calls made").isGreaterThanOrEqualTo(n);
  }
}
