package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A limiter's state as redis-cli sees it, on the server's own clock: one hash per limiter, one
 * field per limit, an expiry when the limiter is full again, nothing once it is; foreign data
 * refused, not misread.
 */
class LimiterLayoutTest {
  private static final long NS = 1_000_000_000L;
  private RedisServer server;
  private Tally tally;

  @BeforeEach
  void open() {
    server = SharedServers.standalone();
    tally = Tally.open(server.uri());
  }

  @AfterEach
  void close() {
    tally.close();
  }

  /** The server's clock, in epoch nanoseconds (to the microsecond). */
  private long serverTime() {
    @SuppressWarnings("unchecked")
    List<Object> t = (List<Object>) server.call("TIME");
    return Long.parseLong((String) t.get(0)) * NS + Long.parseLong((String) t.get(1)) * 1000;
  }

  @Test
  void aLimiterIsOneHashWithAFieldPerLimitOnTheServerClock() {
    String key = "layout-limiter-" + UUID.randomUUID();
    RateLimiter l = tally.limiter(key, Limit.tokenBucket(10, Duration.ofSeconds(10)),
        Limit.fixedWindow(1000, Duration.ofHours(1)));
    long before = serverTime();
    Decision d = l.decide(3);
    long after = serverTime();
    assertThat(d.remaining()).isEqualTo(7);
    @SuppressWarnings("unchecked")
    List<Object> all = (List<Object>) server.call("HGETALL", key);
    assertThat(all).hasSize(8).contains("1", "2", "at", "v");
    assertThat(server.call("HGET", key, "v")).as("the record format")
        .isEqualTo(Integer.toString(dev.tally.spi.LimiterRecord.VERSION));
    String[] bucket = ((String) server.call("HGET", key, "1")).split(" ");
    assertThat(bucket).hasSize(6);
    assertThat(List.of(bucket[0], bucket[1], bucket[2], bucket[4], bucket[5]))
        .containsExactly("1", "10", Long.toString(NS), "0", "0");
    long fullAt = Long.parseLong(bucket[3]);
    assertThat(fullAt).as("decided at the server's TIME").isBetween(before + 3 * NS, after + 3 * NS);
    String[] window = ((String) server.call("HGET", key, "2")).split(" ");
    long hour = 3600 * NS;
    assertThat(window).containsExactly("4", "1000", Long.toString(hour), Long.toString(fullAt - 3 * NS
        - Math.floorMod(fullAt - 3 * NS, hour)), "3", "0");
    long pttl = (Long) server.call("PTTL", key);
    assertThat(pttl).as("kept until the limiter is full: the window's end").isPositive()
        .isLessThanOrEqualTo(hour / 1_000_000);
    assertThat(server.call("HGET", key, "exp")).as("no logical expiry on the server clock").isNull();
    assertThat(Long.parseLong((String) server.call("HGET", key, "at"))).as("decided at")
        .isEqualTo(fullAt - 3 * NS);
  }

  @Test
  void aStateOfAnotherRecordFormatIsRefusedAndResetClearsIt() {
    String key = "layout-limiter-" + UUID.randomUUID();
    RateLimiter l = tally.limiter(key, Limit.tokenBucket(10, Duration.ofMinutes(1)));
    l.tryAcquire();
    server.call("HSET", key, "v", "2");
    assertThatThrownBy(l::tryAcquire).isInstanceOf(dev.tally.StoreException.class)
        .hasMessageContaining("record format 2, written by a newer Tally");
    assertThatThrownBy(l::available).isInstanceOf(dev.tally.StoreException.class);
    assertThat(server.call("HGET", key, "1")).as("left as it was").isNotNull();
    l.reset();
    assertThat(l.available()).isEqualTo(10);
  }

  @Test
  void aNameIsACounterOrALimiterWithOneError() {
    String key = "layout-kind-" + UUID.randomUUID();
    tally.counters().incr(key);
    assertThatThrownBy(() -> tally.limiter(key, Limit.tokenBucket(10, Duration.ofMinutes(1))).tryAcquire())
        .isInstanceOf(dev.tally.WrongKindException.class)
        .hasMessageContaining("holds a counter");
    String limiter = "layout-kind-" + UUID.randomUUID();
    tally.limiter(limiter, Limit.tokenBucket(10, Duration.ofMinutes(1))).tryAcquire();
    assertThatThrownBy(() -> tally.counters().incr(limiter)).isInstanceOf(dev.tally.WrongKindException.class)
        .hasMessageContaining("holds a rate limiter's state");
    assertThatThrownBy(() -> tally.counters().withOperationId("kind-1").incr(limiter))
        .isInstanceOf(dev.tally.WrongKindException.class);
  }

  @Test
  void aFullLimiterHasNoState() {
    String key = "layout-limiter-" + UUID.randomUUID();
    RateLimiter l = tally.limiter(key, Limit.tokenBucket(10, Duration.ofSeconds(10)));
    l.tryAcquire(2);
    assertThat(server.call("EXISTS", key)).isEqualTo(1L);
    l.refund(2);
    assertThat(server.call("EXISTS", key)).isEqualTo(0L);
    RateLimiter fast = tally.limiter(key + "-fast", Limit.tokenBucket(10, Duration.ofMillis(10)));
    fast.tryAcquire();
    RedisServer.sleep(20);
    assertThat(server.call("EXISTS", key + "-fast")).as("expired by Redis once full").isEqualTo(0L);
  }

  @Test
  void reconfiguringToFewerLimitsDropsTheirFields() {
    String key = "layout-limiter-" + UUID.randomUUID();
    RateLimiter l = tally.limiter(key, Limit.tokenBucket(10, Duration.ofMinutes(1)),
        Limit.tokenBucket(100, Duration.ofHours(1)));
    l.tryAcquire(4);
    RateLimiter one = l.reconfigure(Limit.tokenBucket(20, Duration.ofMinutes(2)));
    assertThat(server.call("HEXISTS", key, "2")).isEqualTo(0L);
    assertThat(one.available()).isEqualTo(16);
  }

  @Test
  void foreignDataIsRefusedNotMisread() {
    String key = "layout-limiter-" + UUID.randomUUID();
    server.call("SET", key, "hello");
    RateLimiter l = tally.limiter(key, Limit.tokenBucket(10, Duration.ofMinutes(1)));
    assertThatThrownBy(l::tryAcquire).isInstanceOf(TallyException.class);
    server.call("DEL", key);
    server.call("HSET", key, "1", "9 1 1 1 0 0");
    assertThatThrownBy(l::tryAcquire).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("unknown algorithm tag 9");
    server.call("HSET", key, "1", "1 1 1", "exp", "soon");
    assertThatThrownBy(l::tryAcquire).isInstanceOf(IllegalStateException.class);
    server.call("HDEL", key, "exp");
    assertThatThrownBy(l::tryAcquire).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("3 words, not 6");
    l.reset();
    assertThat(server.call("EXISTS", key)).as("reset clears what it cannot read").isEqualTo(0L);
    assertThat(l.tryAcquire()).isTrue();
  }

  @Test
  void topUpWithoutAQuotaIsRefusedAsOnEveryStore() {
    String key = "layout-limiter-" + UUID.randomUUID();
    var q = tally.quota(key, 5, Limit.Period.DAY, java.time.ZoneId.of("Europe/Paris"));
    q.tryAcquire(5);
    assertThat(q.tryAcquire()).isFalse();
    q.topUp(2);
    assertThat(q.available()).isEqualTo(2);
    // the stored quota wins over a handle that thinks it is a bucket, and keeps its zone's day
    var other = tally.quota(key, 1, Limit.Period.MONTH, java.time.ZoneOffset.UTC);
    assertThat(other.decide(1).limit()).isEqualTo(7);
    String bucket = "layout-limiter-" + UUID.randomUUID();
    tally.limiter(bucket, Limit.tokenBucket(5, Duration.ofHours(1))).tryAcquire();
    var notAQuota = tally.quota(bucket, 5, Limit.Period.DAY, java.time.ZoneOffset.UTC);
    assertThatThrownBy(() -> notAQuota.topUp(1)).isInstanceOf(IllegalStateException.class)
        .hasMessage("limiter '" + bucket + "' has no quota limit to top up");
    assertThat(notAQuota.available()).as("the stored bucket applies").isEqualTo(4);
  }
}
