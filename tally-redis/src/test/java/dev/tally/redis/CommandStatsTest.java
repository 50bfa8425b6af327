package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.Tally;
import java.time.Duration;
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
  void readsAndWritesAreOnePlainCommandEach() {
    assertThat(commandsOf(() -> counters.get("live"))).isEqualTo(Map.of("get", 1L));
    assertThat(commandsOf(() -> counters.put("p", 1, Duration.ofMinutes(1)))).isEqualTo(Map.of("set", 1L));
    assertThat(commandsOf(() -> counters.add("a", 1, Duration.ofMinutes(1)))).isEqualTo(Map.of("set", 1L));
    assertThat(commandsOf(() -> counters.add("a", 1, Duration.ofMinutes(1)))).isEqualTo(Map.of("set", 1L));
    assertThat(commandsOf(() -> counters.delete("a"))).isEqualTo(Map.of("del", 1L));
    assertThat(commandsOf(() -> counters.touch("live", Duration.ofMinutes(1)))).isEqualTo(Map.of("getex", 1L));
    assertThat(commandsOf(() -> counters.ttl("live"))).isEqualTo(Map.of("pttl", 1L));
    assertThat(commandsOf(() -> counters.popDouble("float"))).isEqualTo(Map.of("getdel", 1L));
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
}
