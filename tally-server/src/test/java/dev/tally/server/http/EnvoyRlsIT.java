package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import dev.tally.server.envoy.RlsMessages;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally serve --rules DIR --grpc-port 0} as a real process: Envoy's gRPC service and the
 * HTTP route over the same rules, the rules files watched and reloaded while calls run, a bad file
 * refused, and {@code tally ratelimit} on the command line.
 */
class EnvoyRlsIT {
  /**
   * Year-long windows: these processes run on the wall clock, and a window that ended between
   * two calls would make a count start again (the in-process tests drive time by hand).
   */
  static final String RULES = """
      domain: edge
      descriptors:
        - key: tenant
          rate_limit: {unit: year, requests_per_unit: 2}
        - key: canary
          shadow_mode: true
          rate_limit: {unit: year, requests_per_unit: 1}
      """;
  static final String BODY = "{\"descriptors\": [{\"entries\": [{\"key\": \"tenant\", \"value\":"
      + " \"%s\"}]}]}";

  static void write(Path file, String content) throws Exception {
    // as an operator's tooling would: write aside, then move into place
    Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
    Files.writeString(tmp, content);
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waiting for " + what).isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  static Descriptor tenant(String name) {
    return new Descriptor(List.of(new Entry("tenant", name)), null);
  }

  static RateLimitResponse call(ManagedChannel channel, Descriptor... d) {
    return RateLimitServiceGrpc.newBlockingStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS)
        .shouldRateLimit(RlsMessages.request("edge", 0, d));
  }

  @Test
  void servesTheRulesOverGrpcAndHttpAndReloadsThemUnderLoad(@TempDir Path dir) throws Exception {
    Path rules = Files.createDirectories(dir.resolve("rules"));
    Path file = rules.resolve("edge.yaml");
    Files.writeString(file, RULES);
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--rules",
        rules.toString(), "--grpc-port", "0", "--rules-poll", "50ms")) {
      String line = server.nextLine();
      assertThat(line).matches("grpc listening on 127\\.0\\.0\\.1:\\d+");
      int port = Integer.parseInt(line.substring(line.lastIndexOf(':') + 1));
      ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext()
          .build();
      try {
        // HTTP and gRPC count in the same limiter
        JsonNode first = Responses.ok(server.post("/v1/ratelimit/edge", BODY.formatted("acme")));
        assertThat(first.get("overallCode").asText()).isEqualTo("OK");
        JsonNode s = first.get("statuses").get(0);
        assertThat(s.get("code").asText()).isEqualTo("OK");
        assertThat(s.get("currentLimit").toString())
            .isEqualTo("{\"requestsPerUnit\":2,\"unit\":\"YEAR\"}");
        assertThat(s.get("limitRemaining").asLong()).isEqualTo(1);
        assertThat(s.get("rule").asText()).isEqualTo("tenant");
        assertThat(s.get("source").asText()).isEqualTo(file + ":4");
        assertThat(call(channel, tenant("acme")).getStatuses(0).getLimitRemaining()).isZero();
        HttpResponse<String> over = server.post("/v1/ratelimit/edge", BODY.formatted("acme"));
        JsonNode denied = Responses.status(429, over);
        assertThat(denied.get("overallCode").asText()).isEqualTo("OVER_LIMIT");
        assertThat(denied.get("detail").asText()).isEqualTo("domain 'edge': (tenant=acme) is over"
            + " its limit of 2 per year (" + file + ":4)");
        assertThat(over.headers().firstValue("Retry-After")).isPresent();
        // shadow mode: the status says over, the answer is still 200
        server.post("/v1/ratelimit/edge", "{\"descriptors\": [{\"entries\": [{\"key\":"
            + " \"canary\", \"value\": \"x\"}]}]}");
        JsonNode shadow = Responses.ok(server.post("/v1/ratelimit/edge", "{\"descriptors\":"
            + " [{\"entries\": [{\"key\": \"canary\", \"value\": \"x\"}]}]}"));
        assertThat(shadow.get("statuses").get(0).get("code").asText()).isEqualTo("OVER_LIMIT");
        assertThat(shadow.get("statuses").get(0).get("shadowMode").asBoolean()).isTrue();
        Responses.status(404, server.post("/v1/ratelimit/elsewhere", BODY.formatted("acme")));
        Responses.status(400, server.post("/v1/ratelimit/edge", "{\"descriptors\": []}"));
        JsonNode state = Responses.ok(server.get("/v1/ratelimit"));
        assertThat(state.get("domains").toString()).isEqualTo("[\"edge\"]");
        assertThat(state.get("lastError").isNull()).isTrue();

        // a load of gRPC calls while the file changes twice: once refused, once applied
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<RateLimitResponse> last = new AtomicReference<>();
        List<Thread> load = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
          Thread thread = new Thread(() -> {
            for (int i = 0; i < 50_000 && !stop.get(); i++) { // bounded; stopped far sooner
              try {
                last.set(call(channel, tenant("load")));
              } catch (RuntimeException e) {
                failure.compareAndSet(null, e);
              }
              calls.incrementAndGet();
            }
          });
          thread.start();
          load.add(thread);
        }
        await("load", () -> calls.get() >= 200);
        write(file, RULES.replace("{unit: year, requests_per_unit: 2}", "{unit: year}"));
        await("the refusal", () -> !Responses.ok(server.get("/v1/ratelimit")).get("lastError")
            .isNull());
        int refusedAt = calls.get();
        await("more load", () -> calls.get() >= refusedAt + 200);
        assertThat(last.get().getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(2);
        write(file, RULES.replace("requests_per_unit: 2}", "requests_per_unit: 1000000}"));
        await("the new limit", () -> last.get().getStatuses(0).getCurrentLimit()
            .getRequestsPerUnit() == 1_000_000);
        int appliedAt = calls.get();
        await("more load", () -> calls.get() >= appliedAt + 200);
        stop.set(true);
        for (Thread thread : load) {
          thread.join(30_000);
        }
        assertThat(failure.get()).as("a call failed during the reloads").isNull();
        assertThat(call(channel, tenant("acme")).getOverallCode()).isEqualTo(Code.OK);
        JsonNode after = Responses.ok(server.get("/v1/ratelimit"));
        assertThat(after.get("reloads").asLong()).isEqualTo(1);
        assertThat(after.get("refusedReloads").asLong()).isEqualTo(1);
        assertThat(server.stderr()).contains("rules not reloaded: " + file + ":4: rate_limit of"
            + " tenant has no 'requests_per_unit'");
      } finally {
        channel.shutdownNow();
      }
    }
  }

  @Test
  void limitsStoredByOthersDecideAndTheAnswerSaysSo(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("edge.yaml");
    Files.writeString(file, RULES);
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--rules",
        file.toString())) {
      // the limiter the rule counts in, written first with another limit through /v1/limiters
      Responses.ok(server.post("/v1/limiters/" + HttpApiIT.path("rls:edge:tenant=acme:2/year")
          + "/try", "{\"limit\": {\"fixedWindow\": \"7/365d\"}}"));
      HttpResponse<String> r = server.post("/v1/ratelimit/edge", BODY.formatted("acme"));
      JsonNode s = Responses.ok(r).get("statuses").get(0);
      assertThat(s.get("limitRemaining").asLong()).isEqualTo(5);
      assertThat(s.get("storedLimits").asText()).startsWith("differ: the limiter"
          + " 'rls:edge:tenant=acme:2/year' holds a limit of 7");
      assertThat(r.headers().firstValue("Tally-Limits")).hasValue("stored-differ");
      assertThat(server.stderr()).contains("holds a stored limit of 7, not the 2 per year of "
          + file + ":4");
    }
  }

  record Run(int exit, String out, String err) {}

  static Run run(Path dir, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", ServerProcess.JAR.toString()));
    cmd.addAll(List.of(args));
    Path out = dir.resolve("out.txt");
    Path err = dir.resolve("err.txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile())
        .redirectError(err.toFile());
    pb.environment().remove("TALLY_STORE");
    pb.environment().remove("TALLY_TOKEN");
    Process p = pb.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  @Test
  void aBadRulesFileStopsTheServerFromStarting(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("edge.yaml");
    Files.writeString(file, "domain: edge\ndescriptors:\n  - key: tenant\n    rate_limit: {unit:"
        + " weekly, requests_per_unit: 1}\n");
    Run bad = run(dir, "serve", "--store", "mem:", "--port", "0", "--rules", file.toString());
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.out()).isEmpty();
    assertThat(bad.err()).isEqualTo("tally serve: " + file + ":4: unit 'weekly' is not one of"
        + " second, minute, hour, day, week, month, year\n");
    Run noRules = run(dir, "serve", "--store", "mem:", "--port", "0", "--grpc-port", "0");
    assertThat(noRules.exit()).isEqualTo(2);
    assertThat(noRules.err()).contains("--grpc-port serves the named limits of rules files");
  }

  @Test
  void theCommandLineChecksTheSameRulesOnTheStore(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("edge.yaml");
    Files.writeString(file, RULES);
    String store = "file:" + dir.resolve("data");
    Run first = run(dir, "--store", store, "ratelimit", "edge", "tenant=acme", "canary=x",
        "--rules", file.toString());
    assertThat(first.exit()).as(first.err()).isZero();
    assertThat(first.out()).startsWith("OK\nOK (tenant=acme): 1 of 2 per year left, resets in ")
        .contains("\nOK (canary=x): 0 of 1 per year left");
    Run second = run(dir, "--store", store, "ratelimit", "edge", "tenant=acme", "--rules",
        file.toString(), "--hits", "2");
    assertThat(second.exit()).isEqualTo(1);
    assertThat(second.out()).startsWith("OVER_LIMIT\nOVER_LIMIT (tenant=acme): 0 of 2 per year"); // over: none left to it
    Run json = run(dir, "--store", store, "--json", "ratelimit", "edge", "tenant=acme",
        "--rules", file.toString());
    assertThat(json.exit()).isZero();
    assertThat(Responses.JSON.readTree(json.out()).get("statuses").get(0).get("limitRemaining")
        .asLong()).isZero();
    Run unknown = run(dir, "--store", store, "ratelimit", "nowhere", "tenant=acme", "--rules",
        file.toString());
    assertThat(unknown.exit()).isEqualTo(3);
    assertThat(unknown.err()).isEqualTo("tally: no rules for domain 'nowhere'; the rules define"
        + " domains edge\n");
  }
}
