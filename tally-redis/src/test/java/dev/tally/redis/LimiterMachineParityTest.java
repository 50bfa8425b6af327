package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.Internals;
import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import dev.tally.spi.Store;
import dev.tally.tck.LimiterVectors;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.RandomTimelines;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code limiter.lua} against tally-core's {@code LimiterMachine} where the kit's limiter vectors
 * ({@link LimiterVectorsTest}) do not reach: a batch of calls decided at one instant, the layout
 * of a record, and a caller more than a day behind a stored window, whose call the store sends
 * again with other quota boundaries.
 */
class LimiterMachineParityTest {
  private static final List<Instant> STARTS = LimiterVectors.STARTS;

  private static RedisServer server;
  private ManualTimeSource clock;

  @BeforeAll
  static void start() {
    server = SharedServers.standalone();
  }

  @AfterAll
  static void nothing() {
    // the shared server outlives this class
  }

  /** The record Redis holds, words in order, or null. */
  private static long[] storedRecord(String key) {
    @SuppressWarnings("unchecked")
    List<Object> flat = (List<Object>) server.call("HGETALL", key);
    Map<Integer, String> limits = new TreeMap<>();
    for (int i = 0; i < flat.size(); i += 2) {
      String field = (String) flat.get(i);
      if (!field.equals("exp") && !field.equals("at") && !field.equals("v")) {
        limits.put(Integer.parseInt(field), (String) flat.get(i + 1));
      }
    }
    if (limits.isEmpty()) {
      return null;
    }
    long[] r = new long[limits.size() * 6];
    int o = 0;
    for (String words : limits.values()) {
      String[] w = words.split(" ");
      assertThat(w).hasSize(6);
      for (String x : w) {
        r[o++] = Long.parseLong(x);
      }
    }
    return r;
  }

  @Test
  void aBatchDecidesAsTheMachineOneCallAfterTheOther() {
    SplittableRandom rnd = new SplittableRandom(Long.getLong("parity.seed", 20261108L) + 1);
    RedisClient client = RedisClient.create(SharedServers.standalone().uri());
    try (StatefulRedisConnection<String, String> connection = client.connect()) {
      var commands = connection.async();
      for (int trial = 0; trial < 300; trial++) {
        clock = new ManualTimeSource(STARTS.get(rnd.nextInt(STARTS.size())));
        String key = "parity-batch-" + trial + "-" + rnd.nextInt(1 << 30);
        LimiterCall call = Internals.referenceLimiter(key, RandomTimelines.limits(rnd), RandomTimelines.version(rnd));
        long now = clock.nanos();
        long[] record = null;
        try (Tally tally = Tally.builder(SharedServers.standalone().uri()).timeSource(clock).build()) {
          Store s = Internals.storeOf(tally);
          for (int i = rnd.nextInt(4); i > 0; i--) { // some state first
            long p = RandomTimelines.permits(rnd, call.limits());
            s.limit(call, LimiterOperation.ACQUIRE, p);
            record = call.apply(words(record), now, LimiterOperation.ACQUIRE, p).record();
          }
        }
        int size = 2 + rnd.nextInt(20);
        List<LimiterOperation> ops = new ArrayList<>();
        List<Long> permits = new ArrayList<>();
        List<Decision> expected = new ArrayList<>();
        for (int i = 0; i < size; i++) {
          LimiterOperation op = rnd.nextInt(4) == 0 ? LimiterOperation.PEEK : LimiterOperation.ACQUIRE;
          long p = RandomTimelines.permits(rnd, call.limits());
          ops.add(op);
          permits.add(p);
          LimiterOutcome out = call.apply(words(record), now, op, p);
          record = out.record();
          expected.add(out.decision());
        }
        List<Object> reply = ScriptRunner.<List<Object>>run(commands, LimiterScript.SCRIPT, ScriptOutputType.MULTI, new String[] {key},
            LimiterScript.batchArgs(call, ops, permits, now, true)).join();
        List<Decision> actual = new ArrayList<>();
        for (int i = 0; i < size; i++) {
          actual.add(LimiterScript.decision(reply, i));
        }
        assertThat(actual).as("trial %d: %s %s with %s", trial, ops, permits, call.limits()).isEqualTo(expected);
        assertThat(storedRecord(key)).as("trial %d: the record", trial).isEqualTo(record);
        server.call("DEL", key);
      }
    } finally {
      client.shutdown();
    }
  }

  @Test
  void recordsReadAsTheCoreWritesThem() {
    clock = new ManualTimeSource();
    try (Tally tally = Tally.builder(SharedServers.standalone().uri()).timeSource(clock).build()) {
      String key = "parity-layout";
      LimiterCall call = Internals.referenceLimiter(key, List.of(Limit.tokenBucket(10, Duration.ofSeconds(1)),
          Limit.slidingWindow(100, Duration.ofMinutes(1))));
      Internals.storeOf(tally).limit(call, LimiterOperation.ACQUIRE, 3);
      long[] expected = call.apply(null, clock.nanos(), LimiterOperation.ACQUIRE, 3).record();
      assertThat(storedRecord(key)).isEqualTo(expected);
      assertThat(Arrays.toString(expected)).isEqualTo("[1, 10, 100000000, 1794096000300000000, 0, 0,"
          + " 5, 100, 60000000000, 1794096000000000000, 3, 0]");
      server.call("DEL", key);
    }
  }

  /**
   * A caller whose clock is more than a day behind a stored window's start: the script decides at
   * that start, which the quota boundaries the caller computed around its own clock do not reach.
   * The store sends the call again with boundaries around the instant the script names.
   */
  @Test
  void aCallerADayBehindAStoredWindowStillGetsTheMachinesDecision() {
    clock = new ManualTimeSource(Instant.parse("2026-11-08T12:00:00Z"));
    String key = "parity-days-behind";
    LimiterCall call = Internals.referenceLimiter(key, List.of(Limit.fixedWindow(10, Duration.ofHours(1)),
        Limit.quota(100, Limit.Period.DAY, ZoneOffset.UTC)));
    server.call("DEL", key);
    try (Tally tally = Tally.builder(SharedServers.standalone().uri()).timeSource(clock).build()) {
      Store store = Internals.storeOf(tally);
      LimiterOutcome first = call.apply(null, clock.nanos(), LimiterOperation.ACQUIRE, 1);
      assertThat(store.limit(call, LimiterOperation.ACQUIRE, 1)).isEqualTo(first.decision());
      clock.set(Instant.parse("2026-11-06T11:00:00Z")); // another caller, 2 days and 1 hour behind
      LimiterOutcome second = call.apply(words(first.record().clone()), clock.nanos(), LimiterOperation.RECONFIGURE, 0);
      assertThat(store.limit(call, LimiterOperation.RECONFIGURE, 0)).isEqualTo(second.decision());
      assertThat(storedRecord(key)).isEqualTo(second.record());
    } finally {
      server.call("DEL", key);
    }
  }

  /** Words as the script stores them: the hash keeps no decision instant of its own. */
  private static LimiterRecord words(long[] r) {
    return r == null ? null : new LimiterRecord(Long.MIN_VALUE, r);
  }
}
