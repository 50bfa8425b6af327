package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.Internals;
import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One round trip per counter operation, proved by the server's own bookkeeping: after
 * {@code CONFIG RESETSTAT}, {@code INFO commandstats} lists every command the operation cost.
 * Commands a script runs inside Redis are counted too (under their own names), so each
 * expectation is exactly one client command, plain or {@code evalsha}, plus what the script
 * did inside. The server is this class's own, so no other traffic is counted.
 */
class CommandStatsTest {
  private static RedisServer server;
  private static Tally tally;
  private Counters counters;

  @BeforeAll
  static void start() {
    server = RedisServer.start();
    tally = Tally.open(server.uri());
  }

  @AfterAll
  static void stop() {
    if (tally != null) {
      tally.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @BeforeEach
  void warmUp() {
    counters = tally.counters("stats");
    counters.incr("warm", 1, 5); // the script is cached from here on: EVALSHA, never EVAL
    counters.put("live", 10);
    counters.put("float", 2.5, null);
  }

  /** The commands {@code operation} sent or caused, by name, with their call counts. */
  private Map<String, Long> commandsOf(Runnable operation) {
    server.call("CONFIG", "RESETSTAT");
    operation.run();
    Map<String, Long> calls = new TreeMap<>();
    server.info("commandstats").forEach((name, stats) -> {
      String command = name.substring("cmdstat_".length());
      if (!command.equals("config|resetstat") && !command.equals("info")) {
        long n = Long.parseLong(stats.substring("calls=".length(), stats.indexOf(',')));
        calls.put(command, n);
      }
    });
    return calls;
  }

  @Test
  void incrementFromZeroIsOneIncrby() {
    assertThat(commandsOf(() -> counters.incr("live"))).isEqualTo(Map.of("incrby", 1L));
    assertThat(commandsOf(() -> counters.incr("new", 5))).isEqualTo(Map.of("incrby", 1L));
    assertThat(commandsOf(() -> counters.decr("new", 2))).isEqualTo(Map.of("incrby", 1L));
  }

  @Test
  void incrementWithADefaultIsOneEvalsha() {
    // inside the script: GET the counter, SET it (KEEPTTL) once everything is checked
    Map<String, Long> oneScript = Map.of("evalsha", 1L, "get", 1L, "set", 1L);
    assertThat(commandsOf(() -> counters.incr("live", 1, 100))).isEqualTo(oneScript);
    assertThat(commandsOf(() -> counters.incr("missing", 1, 100))).isEqualTo(oneScript);
    assertThat(commandsOf(() -> counters.incrExisting("live", 1))).isEqualTo(oneScript);
    assertThat(commandsOf(() -> counters.incr("float", 0.5))).isEqualTo(oneScript);
  }

  @Test
  void readsAndWritesAreOneCommandEach() {
    assertThat(commandsOf(() -> counters.get("live"))).isEqualTo(Map.of("get", 1L));
    assertThat(commandsOf(() -> counters.touch("live", Duration.ofMinutes(1)))).isEqualTo(Map.of("getex", 1L));
    // A plain SET, DEL or PTTL would overwrite, delete or report a limiter under the name: the
    // script reads the key first (GET fails on a limiter's hash), in the same round trip.
    assertThat(commandsOf(() -> counters.put("p", 1, Duration.ofMinutes(1))))
        .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "set", 1L));
    String fresh = "added-" + System.nanoTime();
    assertThat(commandsOf(() -> counters.add(fresh, 1, Duration.ofMinutes(1))))
        .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "set", 1L));
    assertThat(commandsOf(() -> counters.add(fresh, 1, Duration.ofMinutes(1)))).isEqualTo(Map.of("evalsha", 1L, "get", 1L));
    assertThat(commandsOf(() -> counters.delete(fresh))).isEqualTo(Map.of("evalsha", 1L, "get", 1L, "del", 1L));
    assertThat(commandsOf(() -> counters.ttl("live"))).isEqualTo(Map.of("evalsha", 1L, "get", 1L, "pttl", 1L));
    assertThat(commandsOf(() -> counters.popDouble("float"))).containsEntry("evalsha", 1L)
        .doesNotContainKey("getdel");
  }

  @Test
  void popIsOneEvalshaBecauseAFloatingCounterMustStay() {
    assertThat(commandsOf(() -> counters.pop("live")))
        .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "del", 1L));
    assertThat(commandsOf(() -> counters.pop("live"))).isEqualTo(Map.of("evalsha", 1L, "get", 1L));
  }

  @Test
  void aTransactionIsOneEvalsha() {
    assertThat(commandsOf(() -> counters.transaction(tx -> tx.incr("a").incr("b", 2).incr("a").get("b"))))
        .isEqualTo(Map.of("evalsha", 1L, "get", 2L, "set", 2L));
  }

  @Test
  void theAsynchronousApiCostsTheSame() {
    assertThat(commandsOf(() -> counters.async().incr("live").toCompletableFuture().join()))
        .isEqualTo(Map.of("incrby", 1L));
    assertThat(commandsOf(() -> counters.async().incr("live", 1, 9).toCompletableFuture().join()))
        .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "set", 1L));
  }

  @Test
  void aForgottenScriptCostsOneExtraEvalOnce() {
    server.call("SCRIPT", "FLUSH");
    assertThat(commandsOf(() -> counters.incr("live", 1, 100)))
        .isEqualTo(Map.of("evalsha", 1L, "eval", 1L, "get", 1L, "set", 1L));
    assertThat(commandsOf(() -> counters.incr("live", 1, 100)))
        .isEqualTo(Map.of("evalsha", 1L, "get", 1L, "set", 1L));
  }

  // ------------------------------------------------------------------ rate limiters

  /** Inside the script: the server clock, the state, and (when it changed) its write and expiry. */
  private static final Map<String, Long> DECIDED_AND_WRITTEN =
      Map.of("evalsha", 1L, "time", 1L, "hgetall", 1L, "hset", 1L, "pexpire", 1L);
  private static final Map<String, Long> DECIDED_UNCHANGED = Map.of("evalsha", 1L, "time", 1L, "hgetall", 1L);

  @Test
  void everyLimiterCallIsOneEvalsha() {
    RateLimiter l = tally.limiter("stats-limiter", Limit.tokenBucket(3, Duration.ofMinutes(1)));
    l.available(); // caches the script
    assertThat(commandsOf(() -> l.tryAcquire())).isEqualTo(DECIDED_AND_WRITTEN);
    assertThat(commandsOf(() -> l.decide(1))).isEqualTo(DECIDED_AND_WRITTEN);
    assertThat(commandsOf(() -> l.available())).isEqualTo(DECIDED_UNCHANGED);
    assertThat(commandsOf(() -> l.refund(1))).isEqualTo(DECIDED_AND_WRITTEN);
    assertThat(commandsOf(() -> l.tryAcquire(3))).as("a denial writes nothing").isEqualTo(DECIDED_UNCHANGED);
    assertThat(commandsOf(() -> l.reset())).isEqualTo(Map.of("evalsha", 1L, "time", 1L, "hgetall", 1L, "del", 1L));
    assertThat(commandsOf(() -> l.decide(0))).as("a full limiter has no state").isEqualTo(DECIDED_UNCHANGED);
  }

  @Test
  void manyDecisionsAreAsManyEvalshasAndNothingElseFromTheClient() {
    RateLimiter l = tally.limiter("stats-many", Limit.gcra(9, 10, Duration.ofSeconds(1)),
        Limit.slidingWindow(1000, Duration.ofHours(1)));
    l.available();
    Map<String, Long> calls = commandsOf(() -> {
      for (int i = 0; i < 100; i++) {
        l.tryAcquire();
      }
    });
    assertThat(calls.get("evalsha")).isEqualTo(100L);
    assertThat(calls.get("time")).isEqualTo(100L);
    assertThat(calls.get("hgetall")).isEqualTo(100L);
    assertThat(calls.keySet()).isSubsetOf("evalsha", "time", "hgetall", "hset", "pexpire", "del");
  }

  @Test
  void theAsynchronousLimiterCostsTheSame() {
    LimiterCall call = Internals.referenceLimiter("stats-async", List.of(Limit.tokenBucket(3, Duration.ofMinutes(1))));
    var async = Internals.storeOf(tally).async();
    async.limit(call, LimiterOperation.PEEK, 1).toCompletableFuture().join();
    assertThat(commandsOf(() -> async.limit(call, LimiterOperation.ACQUIRE, 1).toCompletableFuture().join()))
        .isEqualTo(DECIDED_AND_WRITTEN);
  }

  @Test
  void aSuppliedClockReplacesTime() {
    try (Tally clocked = Tally.builder(server.uri()).timeSource(new dev.tally.tck.ManualTimeSource()).build()) {
      RateLimiter l = clocked.limiter("stats-clocked", Limit.tokenBucket(3, Duration.ofMinutes(1)));
      l.available();
      assertThat(commandsOf(() -> l.tryAcquire()))
          .isEqualTo(Map.of("evalsha", 1L, "hgetall", 1L, "hset", 1L, "pexpire", 1L));
    }
  }
}
