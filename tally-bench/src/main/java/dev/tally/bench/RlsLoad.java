package dev.tally.bench;

import dev.tally.Tally;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.Rules;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * Envoy's {@code ShouldRateLimit} against {@code tally serve --grpc-port}, from a grpc-java
 * client keeping {@code --concurrency} calls in flight for {@code --seconds} per round, as Envoy
 * keeps calls in flight on its connections to a rate limit service. Prints each round's decisions
 * per second and the server's CPU per decision, read from {@code /proc/PID/stat} (utime + stime)
 * as {@code ../shared/bench/http_vs_nginx.sh} reads it for HTTP.
 *
 * <pre>
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.RlsLoad \
 *     --jar tally-server/target/tally.jar --store mem: --concurrency 16 --seconds 5 --rounds 4
 * </pre>
 *
 * With {@code --jar}, it starts the server itself over a rules file of one domain ({@code bench},
 * descriptor {@code client}, far more requests per second than are sent, so every decision is
 * a store call that allows) and stops it at the end. Against a server already running, give
 * {@code --target HOST:PORT --pid PID} and a rules file holding that domain. Each call carries one
 * descriptor {@code (client, cN)}, N cycling over {@code --keys} values (default 1000), so the
 * store holds that many limiters. {@code --in-process URI} measures Tally's own part instead:
 * the same checks called in a loop in this process, without gRPC. The first round warms the JIT up and is not counted in the
 * summary; it lasts {@code --warmup} seconds (default 20: on a busy machine the server's JIT
 * takes that long before the cost per decision settles).
 */
public final class RlsLoad {
  private RlsLoad() {}

  static final String RULES = """
      domain: bench
      descriptors:
        - key: client
          rate_limit: {unit: second, requests_per_unit: 4000000000}
      """;

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    int concurrency = Integer.parseInt(o.getOrDefault("concurrency", "16"));
    double seconds = Double.parseDouble(o.getOrDefault("seconds", "5"));
    int rounds = Integer.parseInt(o.getOrDefault("rounds", "4"));
    int keys = Integer.parseInt(o.getOrDefault("keys", "1000"));
    int channels = Integer.parseInt(o.getOrDefault("channels", "1"));
    double warmup = Double.parseDouble(o.getOrDefault("warmup", "20"));
    if (o.containsKey("in-process")) {
      inProcess(o.get("in-process"), keys, seconds, rounds);
      return;
    }
    Process server = null;
    String target = o.get("target");
    long pid;
    Path dir = null;
    if (o.containsKey("jar")) {
      dir = Files.createTempDirectory("rls-load");
      Path rules = dir.resolve("bench.yaml");
      Files.writeString(rules, RULES);
      List<String> cmd = new ArrayList<>(List.of(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar",
          o.get("jar"), "serve", "--store", o.getOrDefault("store", "mem:"), "--port", "0",
          "--grpc-port", "0", "--rules", rules.toString()));
      server = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(),
          StandardCharsets.UTF_8));
      String line;
      while ((line = out.readLine()) != null && !line.startsWith("grpc listening on ")) {
        // the HTTP "listening on" line comes first
      }
      if (line == null) {
        throw new IllegalStateException("the server did not start");
      }
      target = line.substring("grpc listening on ".length());
      pid = server.pid();
    } else {
      if (target == null || !o.containsKey("pid")) {
        throw new IllegalArgumentException("give --jar TALLY_JAR, or --target HOST:PORT and"
            + " --pid SERVER_PID");
      }
      pid = Long.parseLong(o.get("pid"));
    }
    int colon = target.lastIndexOf(':');
    String host = target.substring(0, colon).replace("[", "").replace("]", "");
    int port = Integer.parseInt(target.substring(colon + 1));
    List<ManagedChannel> chans = new ArrayList<>();
    for (int c = 0; c < channels; c++) {
      chans.add(NettyChannelBuilder.forAddress(host, port).usePlaintext().build());
    }
    List<RateLimitRequest> requests = new ArrayList<>(keys);
    for (int k = 0; k < keys; k++) {
      requests.add(RateLimitRequest.newBuilder().setDomain("bench")
          .addDescriptors(RateLimitDescriptor.newBuilder().addEntries(
              RateLimitDescriptor.Entry.newBuilder().setKey("client").setValue("c" + k)))
          .build());
    }
    long hz = clockTicks();
    System.out.printf(Locale.ROOT, "ShouldRateLimit on %s (pid %d): %d in flight on %d"
        + " channel(s), %d keys, %.0f s warm-up, %.0f s x %d rounds, load average %s%n", target,
        pid, concurrency, channels, keys, warmup, seconds, rounds, loadAverage());
    long totalDecisions = 0;
    double totalCpu = 0;
    double totalSeconds = 0;
    try {
      for (int r = 0; r <= rounds; r++) {
        double cpu0 = cpuSeconds(pid, hz);
        long start = System.nanoTime();
        long[] counts = round(chans, requests, concurrency,
            start + (long) ((r == 0 ? warmup : seconds) * 1e9));
        double elapsed = (System.nanoTime() - start) / 1e9;
        double cpu = cpuSeconds(pid, hz) - cpu0;
        long decisions = counts[0];
        System.out.printf(Locale.ROOT, "%s %d: %,.0f decisions/s, %.2f us server CPU per"
            + " decision (%d decisions, %d over limit, %d failed)%n",
            r == 0 ? "warm-up" : "round", r, decisions / elapsed, 1e6 * cpu / decisions,
            decisions, counts[1], counts[2]);
        if (counts[2] > 0) {
          throw new IllegalStateException(counts[2] + " calls failed");
        }
        if (r > 0) {
          totalDecisions += decisions;
          totalCpu += cpu;
          totalSeconds += elapsed;
        }
      }
      System.out.printf(Locale.ROOT, "mean of %d rounds: %,.0f decisions/s, %.2f us server CPU"
          + " per decision; load average after %s%n", rounds, totalDecisions / totalSeconds,
          1e6 * totalCpu / totalDecisions, loadAverage());
    } finally {
      for (ManagedChannel c : chans) {
        c.shutdownNow();
      }
      if (server != null) {
        server.destroy();
        server.waitFor(20, TimeUnit.SECONDS);
      }
      if (dir != null) {
        Files.deleteIfExists(dir.resolve("bench.yaml"));
        Files.deleteIfExists(dir);
      }
    }
  }

  /**
   * Tally's own part of a decision, without gRPC: {@code NamedLimits.check} in a loop on one
   * thread of this process, over the store {@code uri} ({@code --in-process mem:}).
   */
  static void inProcess(String uri, int keys, double seconds, int rounds) throws Exception {
    Rules rules = Rules.of("bench.yaml", RULES);
    try (Tally tally = Tally.open(uri)) {
      NamedLimits limits = new NamedLimits(tally, rules);
      List<List<Descriptor>> requests = new ArrayList<>(keys);
      for (int k = 0; k < keys; k++) {
        requests.add(List.of(new Descriptor(List.of(new Entry("client", "c" + k)), null)));
      }
      for (int r = 0; r <= rounds; r++) {
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        long n = 0;
        while (System.nanoTime() < deadline) {
          for (int i = 0; i < 1000; i++, n++) {
            limits.check("bench", requests.get((int) (n % keys)), 0, null).toCompletableFuture().join();
          }
        }
        System.out.printf(Locale.ROOT, "%s %d: %.0f ns per NamedLimits.check on %s%n",
            r == 0 ? "warm-up" : "round", r, (System.nanoTime() - start) / (double) n, uri);
      }
    }
  }

  /** Keeps {@code concurrency} calls in flight until {@code deadline}: decisions, over, failed. */
  static long[] round(List<ManagedChannel> channels, List<RateLimitRequest> requests, int concurrency,
      long deadline) throws InterruptedException {
    LongAdder decisions = new LongAdder();
    LongAdder over = new LongAdder();
    LongAdder failed = new LongAdder();
    CountDownLatch done = new CountDownLatch(concurrency);
    AtomicBoolean stop = new AtomicBoolean();
    for (int i = 0; i < concurrency; i++) {
      new Caller(channels.get(i % channels.size()), requests, i, deadline, decisions, over, failed,
          done, stop).next();
    }
    if (!done.await((deadline - System.nanoTime()) / 1_000_000 + 30_000, TimeUnit.MILLISECONDS)) {
      stop.set(true);
      throw new IllegalStateException("calls still in flight 30 s after the round's end");
    }
    return new long[] {decisions.sum(), over.sum(), failed.sum()};
  }

  /** One slot of the concurrency: a call, and on its answer the next, until the deadline. */
  private static final class Caller implements StreamObserver<RateLimitResponse> {
    private final ManagedChannel channel;
    private final List<RateLimitRequest> requests;
    private final long deadline;
    private final LongAdder decisions;
    private final LongAdder over;
    private final LongAdder failed;
    private final CountDownLatch done;
    private final AtomicBoolean stop;
    private int next;

    Caller(ManagedChannel channel, List<RateLimitRequest> requests, int first, long deadline,
        LongAdder decisions, LongAdder over, LongAdder failed, CountDownLatch done,
        AtomicBoolean stop) {
      this.channel = channel;
      this.requests = requests;
      this.next = first;
      this.deadline = deadline;
      this.decisions = decisions;
      this.over = over;
      this.failed = failed;
      this.done = done;
      this.stop = stop;
    }

    void next() {
      if (stop.get() || System.nanoTime() >= deadline) {
        done.countDown();
        return;
      }
      RateLimitRequest r = requests.get(next);
      next = (next + 1) % requests.size();
      ClientCalls.asyncUnaryCall(channel.newCall(RateLimitServiceGrpc.getShouldRateLimitMethod(),
          CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS)), r, this);
    }

    @Override
    public void onNext(RateLimitResponse value) {
      decisions.increment();
      if (value.getOverallCode() == RateLimitResponse.Code.OVER_LIMIT) {
        over.increment();
      }
    }

    @Override
    public void onError(Throwable t) {
      failed.increment();
      next();
    }

    @Override
    public void onCompleted() {
      next();
    }
  }

  private static double cpuSeconds(long pid, long hz) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    // fields after the command name, which is in parentheses and may hold spaces
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ", -1);
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) hz;
  }

  private static long clockTicks() {
    try {
      Process p = new ProcessBuilder("getconf", "CLK_TCK").start();
      String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
      p.waitFor(5, TimeUnit.SECONDS);
      return Long.parseLong(s);
    } catch (IOException | NumberFormatException e) {
      return 100; // Linux's USER_HZ nearly everywhere
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 100;
    }
  }

  private static String loadAverage() {
    try {
      String[] l = Files.readString(Path.of("/proc/loadavg")).split(" ", -1);
      return l[0] + " " + l[1] + " " + l[2];
    } catch (IOException e) {
      return "unknown";
    }
  }
}
