package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.StoreException;
import dev.tally.Tally;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A store opened through Sentinel follows the primary: when it dies, or Sentinel is told to fail
 * over, calls fail with store exceptions for a few seconds (never hanging), then go on against
 * the promoted replica with the counts it had replicated.
 */
class SentinelFailoverTest {
  private static final long TIMEOUT_MILLIS = 1000;

  private SentinelGroup group;
  private Tally tally;
  private Counters counters;

  @BeforeEach
  void start() {
    group = SentinelGroup.start();
    tally = Tally.open(group.uri("&timeout=" + TIMEOUT_MILLIS + "ms"));
    counters = tally.counters("failover");
  }

  @AfterEach
  void stop() {
    if (tally != null) {
      tally.close();
    }
    if (group != null) {
      group.close();
    }
  }

  @Test
  void callsResumeOnThePromotedReplicaWhenThePrimaryDies() {
    assertThat(group.primaryPort()).isEqualTo(group.first.port());
    countUntilReplicated(100);

    group.first.kill();
    Map<String, Integer> outcomes = incrementUntilItWorksAgainOn(group.second);

    assertThat(outcomes).containsKey("ok");
    assertThat(counters.get("k").orElseThrow()).isGreaterThan(100); // the replicated 100, and more
  }

  @Test
  void callsFollowAForcedFailover() {
    countUntilReplicated(100);

    group.sentinel.call("SENTINEL", "FAILOVER", SentinelGroup.NAME);
    Map<String, Integer> outcomes = incrementUntilItWorksAgainOn(group.second);

    assertThat(outcomes).containsKey("ok");
    assertThat(counters.get("k").orElseThrow()).isGreaterThan(100);
    assertThat(group.second.info("replication").get("role")).isEqualTo("master");
  }

  /** Counts to {@code n} and waits until the replica holds it, so a failover cannot lose it. */
  private void countUntilReplicated(long n) {
    counters.put("k", n);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!Long.toString(n).equals(group.second.call("GET", "failover:k"))) {
      assertThat(System.nanoTime()).as("replication of failover:k").isLessThan(deadline);
      RedisServer.sleep(20);
    }
  }

  /**
   * Increments from now on until 20 calls in a row have succeeded since Sentinel named
   * {@code promoted} the primary, checking that every call answers in time and every failure is
   * a store failure. Returns the outcomes by kind.
   */
  private Map<String, Integer> incrementUntilItWorksAgainOn(RedisServer promoted) {
    Map<String, Integer> outcomes = new TreeMap<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
    int inARow = 0;
    while (inARow < 20) {
      assertThat(System.nanoTime()).as("calls succeed again within 40 s: %s", outcomes).isLessThan(deadline);
      boolean switched = group.primaryPort() == promoted.port();
      long started = System.nanoTime();
      String outcome;
      try {
        counters.incr("k");
        outcome = switched ? "ok" : "ok before the switch";
        inARow = switched ? inARow + 1 : 0;
      } catch (StoreException e) {
        outcome = e.getClass().getSimpleName();
        inARow = 0;
        RedisServer.sleep(50);
      }
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
      assertThat(millis).as("one call during the failover (%s)", outcome).isLessThan(TIMEOUT_MILLIS + 1500);
      outcomes.merge(outcome, 1, Integer::sum);
    }
    System.out.println("calls through the failover: " + outcomes);
    return outcomes;
  }
}
