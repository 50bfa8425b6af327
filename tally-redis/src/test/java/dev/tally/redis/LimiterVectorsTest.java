package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Tally;
import dev.tally.spi.LimiterRecord;
import dev.tally.tck.LimiterVectorReplay;
import dev.tally.tck.LimiterVectors;
import dev.tally.tck.LimiterVectors.Keeping;
import dev.tally.tck.LimiterVectors.Stored;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * {@code limiter.lua} replays the kit's limiter vectors ({@link LimiterVectors}) on a real Redis:
 * every call decided by the script at the test clock passed as its argument, every decision and
 * the hash it leaves (each limit's six words, {@code at}, {@code exp}, the format {@code v})
 * equal to the machine's.
 */
class LimiterVectorsTest {

  @Test
  void limiterScriptDecidesEveryVectorAsTheMachine() {
    LimiterVectorReplay.Result r = replay(SharedServers.standalone().uri());
    System.out.println("redis: " + r);
    assertThat(r.disagreements()).as(r.toString()).isZero();
    assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
  }

  /** Replays every vector on the Redis at {@code uri}, reading the state it leaves from there. */
  static LimiterVectorReplay.Result replay(String uri) {
    RedisClient client = RedisClient.create(uri);
    List<StatefulRedisConnection<String, String>> opened = new CopyOnWriteArrayList<>();
    ThreadLocal<StatefulRedisConnection<String, String>> reads = ThreadLocal.withInitial(() -> {
      StatefulRedisConnection<String, String> c = client.connect();
      opened.add(c);
      return c;
    });
    try {
      return LimiterVectorReplay.replay(LimiterVectors.generate("vectors-", Keeping.REDIS),
          // a timeout for a machine whose cores are shared: the connection, not the script, is slow there
          clock -> Tally.builder(uri + "?timeout=10s").timeSource(clock).build(),
          key -> stored(reads.get().sync().hgetall(key)), 4);
    } finally {
      opened.forEach(StatefulRedisConnection::close);
      client.shutdown();
    }
  }

  /** The hash as a state: words of the numbered fields in order, {@code at} and {@code exp}. */
  private static Stored stored(Map<String, String> hash) {
    if (hash.isEmpty()) {
      return null;
    }
    assertThat(hash.get("v")).as("the record format").isEqualTo(Integer.toString(LimiterRecord.VERSION));
    Map<Integer, String> limits = new TreeMap<>();
    hash.forEach((field, value) -> {
      if (!field.equals("exp") && !field.equals("at") && !field.equals("v")) {
        limits.put(Integer.parseInt(field), value);
      }
    });
    long[] words = new long[limits.size() * LimiterRecord.WORDS_PER_LIMIT];
    int o = 0;
    for (String line : limits.values()) {
      for (String w : line.split(" ", -1)) {
        words[o++] = Long.parseLong(w);
      }
    }
    String at = hash.get("at");
    String exp = hash.get("exp");
    return new Stored(at == null ? Long.MIN_VALUE : Long.parseLong(at), words, exp == null ? null : new BigInteger(exp));
  }
}
