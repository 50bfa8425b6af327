package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.CounterOverflowException;
import dev.tally.Limit;
import dev.tally.Counters;
import dev.tally.NotAnIntegerException;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TallyException;
import dev.tally.TransactionResult;
import dev.tally.tck.ManualTimeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What is particular to Redis: counters are plain strings that redis-cli reads and updates,
 * floating counters keep their marker, 64-bit arithmetic stays exact inside scripts, and keys
 * that Tally did not write are reported, not misread. Values are checked with raw RESP.
 */
class RedisLayoutTest {
  private RedisServer server;
  private Tally tally;
  private Counters counters;
  private String prefix;

  @BeforeEach
  void open() {
    server = SharedServers.standalone();
    tally = Tally.open(server.uri());
    String group = "layout-" + Long.toHexString(new Random().nextLong());
    counters = tally.counters(group);
    prefix = group + ":";
  }

  @AfterEach
  void close() {
    tally.close();
  }

  private Object raw(String... command) {
    return server.call(command);
  }

  /** Overflow reads as CounterMath says it, whether INCRBY, the script or a transaction refused. */
  @Test
  void overflowsCarryCounterMathsMessage() {
    counters.put("big", Long.MAX_VALUE - 1);
    String expected = dev.tally.spi.CounterMath.overflow(counters.name() + ":big", Long.MAX_VALUE - 1, 5).getMessage();
    assertThatThrownBy(() -> counters.incr("big", 5)).hasMessage(expected); // INCRBY
    assertThatThrownBy(() -> counters.incrExisting("big", 5)).hasMessage(expected); // the script
    assertThatThrownBy(() -> counters.withOperationId("overflow-" + counters.name()).incr("big", 5)).hasMessage(expected);
    assertThatThrownBy(() -> counters.incr("new", Long.MAX_VALUE, 1)).hasMessage(
        dev.tally.spi.CounterMath.overflow(counters.name() + ":new", 1, Long.MAX_VALUE).getMessage());
    counters.incr("f", Double.MAX_VALUE);
    assertThatThrownBy(() -> counters.incr("f", Double.MAX_VALUE))
        .isInstanceOf(dev.tally.CounterOverflowException.class).hasMessageContaining("is not finite");
    assertThat(counters.get("big")).hasValue(Long.MAX_VALUE - 1);
  }

  /** An operation id's record: a small hash beside the keys, never listed as a counter. */
  @Test
  void anOperationIdsRecordIsAHashThatKeysDoesNotList() {
    String id = "layout-" + counters.name();
    counters.withOperationId(id).incr("k", 7);
    String record = "tally:op:" + id;
    assertThat(server.call("TYPE", record)).isEqualTo("hash");
    assertThat((String) server.call("HGET", record, "r")).endsWith("|L7")
        .startsWith(String.format("%016x", new dev.tally.spi.Mutation.Incr(counters.name() + ":k", 7, 0, true).fingerprint()));
    long pttl = (Long) server.call("PTTL", record);
    assertThat(pttl).as("kept for the retention window").isBetween(3_500_000L, 3_600_000L);
    assertThat(tally.counters().keys("tally:op:")).as("keys lists counters only").isEmpty();
  }

  @Test
  void integerCountersArePlainDecimalStringsThatRedisCliCanIncrement() {
    counters.incr("views", 41);
    assertThat(raw("GET", prefix + "views")).isEqualTo("41");
    assertThat(raw("INCRBY", prefix + "views", "1")).isEqualTo(42L);
    assertThat(counters.get("views")).hasValue(42);
    counters.incr("negative", -7, 0);
    assertThat(raw("GET", prefix + "negative")).isEqualTo("-7");
  }

  @Test
  void aFloatingCounterHoldingAWholeNumberStaysFloating() {
    counters.incr("f", 2.5);
    assertThat(raw("GET", prefix + "f")).isEqualTo("2.5");
    assertThat(counters.incr("f", 0.5)).isEqualTo(3.0);
    assertThat(raw("GET", prefix + "f")).isEqualTo("3.0");
    assertThatThrownBy(() -> counters.get("f")).isInstanceOf(NotAnIntegerException.class);
    assertThatThrownBy(() -> counters.incr("f")).isInstanceOf(NotAnIntegerException.class);
    assertThat(counters.getDouble("f")).hasValue(3.0);

    counters.put("p", 3.0, null);
    assertThat(raw("GET", prefix + "p")).isEqualTo("3.0");
    counters.put("tiny", 1e-300, null);
    assertThat(raw("GET", prefix + "tiny")).isEqualTo("1.0E-300");
    assertThat(counters.incr("tiny", 1e-300)).isEqualTo(2e-300);
    assertThat(raw("GET", prefix + "tiny")).isEqualTo("2e-300");
    assertThat(counters.incr("sum", 0.1)).isEqualTo(0.1);
    assertThat(counters.incr("sum", 0.2)).isEqualTo(0.1 + 0.2);
    assertThat(raw("GET", prefix + "sum")).isEqualTo("0.30000000000000004");
  }

  @Test
  void anIntegerTurnsFloatingOnAFloatingIncrement() {
    counters.incr("k", 2);
    assertThat(counters.incr("k", 1.0)).isEqualTo(3.0);
    assertThat(raw("GET", prefix + "k")).isEqualTo("3.0");
  }

  @Test
  void incrementsWithADefaultAreExactAtThe64BitLimits() {
    counters.put("max", Long.MAX_VALUE - 10);
    assertThat(counters.incr("max", 3, 100)).isEqualTo(Long.MAX_VALUE - 7);
    assertThat(counters.incrExisting("max", 7)).isEqualTo(Long.MAX_VALUE);
    assertThatThrownBy(() -> counters.incrExisting("max", 1)).isInstanceOf(CounterOverflowException.class);
    assertThat(raw("GET", prefix + "max")).isEqualTo(Long.toString(Long.MAX_VALUE));

    assertThat(counters.incr("min", -1, Long.MIN_VALUE + 1)).isEqualTo(Long.MIN_VALUE);
    assertThatThrownBy(() -> counters.decr("min", 1, 5)).isInstanceOf(CounterOverflowException.class);
    assertThat(counters.incr("min", Long.MAX_VALUE, 5)).isEqualTo(-1);
    // 2^53 + 1 is not a double: a script doing arithmetic in Lua numbers would answer 2^53
    counters.put("big", (1L << 53) + 1);
    assertThat(counters.incr("big", 2, 7)).isEqualTo((1L << 53) + 3);
  }

  @Test
  void transactionsAddExactlyOverTheWhole64BitRange() {
    Random random = new Random(20261108);
    long[] interesting = {0, 1, -1, 9_999_999, 10_000_000, -10_000_000, 1L << 53, -(1L << 53) - 1,
        Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE - 1, Long.MIN_VALUE + 1};
    for (int round = 0; round < 40; round++) {
      List<long[]> pairs = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        long a = random.nextBoolean() ? interesting[random.nextInt(interesting.length)] : random.nextLong();
        long b = random.nextBoolean() ? interesting[random.nextInt(interesting.length)] : random.nextLong() >> random.nextInt(64);
        pairs.add(new long[] {a, b});
      }
      for (int i = 0; i < pairs.size(); i++) {
        long a = pairs.get(i)[0];
        long b = pairs.get(i)[1];
        String key = "t" + i;
        long expected;
        try {
          expected = Math.addExact(a, b);
        } catch (ArithmeticException overflow) {
          assertThatThrownBy(() -> counters.transaction(tx -> tx.put(key, a, null).incr(key, b, 0)))
              .as("%d + %d", a, b).isInstanceOf(CounterOverflowException.class);
          continue;
        }
        TransactionResult r = counters.transaction(tx -> tx.put(key, a, null).incr(key, b, 0).get(key));
        assertThat(r.getLong(1)).as("%d + %d", a, b).isEqualTo(expected);
        assertThat(counters.get(key)).hasValue(expected);
      }
    }
  }

  @Test
  void aValueTallyDidNotWriteIsReportedAsNotACounter() {
    raw("SET", prefix + "text", "hello");
    assertThatThrownBy(() -> counters.get("text")).isInstanceOf(TallyException.class)
        .isNotInstanceOf(StoreException.class).hasMessageContaining("not a counter");
    assertThatThrownBy(() -> counters.incr("text", 1, 5)).isInstanceOf(TallyException.class)
        .isNotInstanceOf(StoreException.class).hasMessageContaining("not a counter");
    // A plain INCRBY says only "not an integer", as it does for a floating counter.
    assertThatThrownBy(() -> counters.incr("text", 1)).isInstanceOf(TallyException.class)
        .isNotInstanceOf(NotAnIntegerException.class).hasMessageContaining("not a counter");
    assertThatThrownBy(() -> counters.async().incr("text", 1).toCompletableFuture().join())
        .hasRootCauseInstanceOf(TallyException.class).hasMessageContaining("not a counter");
    // A pop refuses it before deleting anything.
    assertThatThrownBy(() -> counters.popDouble("text")).isInstanceOf(TallyException.class)
        .hasMessageContaining("not a counter");
    assertThatThrownBy(() -> counters.pop("text")).isInstanceOf(TallyException.class)
        .hasMessageContaining("not a counter");
    assertThat(raw("GET", prefix + "text")).isEqualTo("hello");
    raw("HSET", prefix + "hash", "field", "1");
    assertThatThrownBy(() -> counters.get("hash")).isInstanceOf(TallyException.class)
        .isNotInstanceOf(StoreException.class).hasMessageContaining("not a counter");
    assertThatThrownBy(() -> counters.incr("hash")).isInstanceOf(TallyException.class)
        .isNotInstanceOf(StoreException.class);
    assertThat(counters.keys("")).containsExactly("text"); // keys lists strings only
  }

  @Test
  void scriptsAreLoadedAgainAfterTheServerForgetsThem() {
    assertThat(counters.incr("k", 1, 10)).isEqualTo(11);
    raw("SCRIPT", "FLUSH");
    assertThat(counters.incr("k", 1, 10)).isEqualTo(12);
    assertThat(counters.incr("k", 1, 10)).isEqualTo(13);
  }

  @Test
  void touchAnswersWhetherTheKeyWasLiveEvenWhenItHadNoExpiry() {
    counters.put("permanent", 1);
    assertThat(counters.touch("permanent", null)).isTrue(); // PERSIST alone would answer 0 here
    assertThat(counters.touch("permanent", Duration.ofMinutes(1))).isTrue();
    assertThat((Long) raw("PTTL", prefix + "permanent")).isBetween(50_000L, 60_000L);
    assertThat(counters.touch("missing", null)).isFalse();
  }

  @Test
  void ttlsBelowAMillisecondRoundUpInsteadOfVanishing() {
    counters.put("k", 1, Duration.ofNanos(1));
    assertThat(CounterScript.millis(1)).isEqualTo(1);
    assertThat(CounterScript.millis(1_500_000)).isEqualTo(2);
    assertThat(CounterScript.millis(300_000_000)).isEqualTo(300);
  }

  @Test
  void keysMatchesEveryGlobCharacterLiterally() {
    for (String k : new String[] {"a\\b", "a\\\\b", "a]b", "a*", "a?", "a[b]", "ab"}) {
      counters.incr(k);
    }
    assertThat(counters.keys("a\\")).containsExactlyInAnyOrder("a\\b", "a\\\\b");
    assertThat(counters.keys("a]")).containsExactly("a]b");
    assertThat(counters.keys("a[b")).containsExactly("a[b]");
    assertThat(counters.keys("a")).hasSize(7);
    assertThat(AsyncRedisStore.globLiteral("x*?[]\\y")).isEqualTo("x\\*\\?\\[\\]\\\\y");
  }

  @Test
  void expiryRunsOnTheRedisClockNotOnASuppliedOne() {
    ManualTimeSource clock = new ManualTimeSource();
    try (Tally onClock = Tally.builder(server.uri()).timeSource(clock).build()) {
      Counters c = onClock.counters(prefix.substring(0, prefix.length() - 1));
      c.put("k", 1, Duration.ofMinutes(1));
      clock.advance(Duration.ofDays(1));
      assertThat(c.get("k")).hasValue(1);
    }
  }

  @Test
  void aRateLimiterIsAHashThatCounterListingsSkip() {
    counters.incr("views");
    var limiter = tally.limiter(prefix + "api", Limit.tokenBucket(10, Duration.ofMinutes(1)));
    assertThat(limiter.tryAcquire(3)).isTrue();
    assertThat(raw("TYPE", prefix + "api")).isEqualTo("hash");
    assertThat(counters.keys("")).containsExactly("views");
    assertThatThrownBy(() -> counters.get("api")).isInstanceOf(TallyException.class);
  }

  @Test
  void manyKeysAreListedOnceEach() {
    counters.transaction(tx -> {
      for (int i = 0; i < 2500; i++) {
        tx.incr("many:" + i);
      }
    });
    assertThat(counters.keys("many:")).hasSize(2500).doesNotHaveDuplicates();
  }
}
