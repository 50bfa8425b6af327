package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What a Cluster adds to the rules: transactions stay in one hash slot, keys spans every primary. */
class ClusterRulesTest {
  private RedisCluster cluster;
  private Tally tally;
  private String group;

  @BeforeEach
  void open() {
    cluster = SharedServers.cluster();
    tally = Tally.open(cluster.uri());
    group = "rules-" + Long.toHexString(new Random().nextLong());
  }

  @AfterEach
  void close() {
    tally.close();
  }

  @Test
  void aTransactionAcrossHashSlotsIsRefusedWithTheFix() {
    Counters counters = tally.counters(group);
    String elsewhere = "b";
    for (int i = 0; cluster.nodeFor(group + ":" + elsewhere) == cluster.nodeFor(group + ":a"); i++) {
      elsewhere = "b" + i;
    }
    String other = elsewhere;
    assertThatThrownBy(() -> counters.transaction(tx -> tx.incr("a").incr(other)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("hash slot")
        .hasMessageContaining("{user42}");
    assertThat(counters.get("a")).isEmpty();
    assertThat(counters.get(other)).isEmpty();
  }

  @Test
  void aJointLimiterDecisionAcrossHashSlotsIsRefusedWithTheFix() {
    String elsewhere = "b";
    for (int i = 0; cluster.nodeFor(group + ":" + elsewhere) == cluster.nodeFor(group + ":a"); i++) {
      elsewhere = "b" + i;
    }
    RateLimiter a = tally.limiter(group + ":a", Limit.tokenBucket(5, Duration.ofMinutes(1)));
    RateLimiter b = tally.limiter(group + ":" + elsewhere, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThatThrownBy(() -> tally.decide(List.of(a, b), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("joint limiter decision")
        .hasMessageContaining("hash slot")
        .hasMessageContaining("{tenant7}");
    assertThat(a.available()).isEqualTo(5);
    assertThat(b.available()).isEqualTo(5);
  }

  @Test
  void hashTaggedLimitersAreDecidedTogetherOnOneNode() {
    String tag = "{" + group + "}";
    RateLimiter user = tally.limiter(tag + ":user", Limit.tokenBucket(2, Duration.ofMinutes(1)));
    RateLimiter global = tally.limiter(tag + ":global", Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThat(tally.decide(List.of(user, global), 2).allowed()).isTrue();
    assertThat(tally.decide(List.of(user, global), 1).refusedBy()).isEqualTo(user.name());
    assertThat(global.available()).isEqualTo(3);
  }

  @Test
  void aHashTaggedGroupKeepsItsTransactionsOnOneNode() {
    Counters user = tally.counters("{" + group + "}");
    user.transaction(tx -> tx.incr("views").incr("clicks", 2));
    RedisServer node = cluster.nodeFor("{" + group + "}:views");
    assertThat(node.call("GET", "{" + group + "}:views")).isEqualTo("1");
    assertThat(node.call("GET", "{" + group + "}:clicks")).isEqualTo("2");
  }

  @Test
  void keysScansEveryPrimary() {
    Counters counters = tally.counters(group);
    Set<RedisServer> nodes = new HashSet<>();
    Set<String> written = new HashSet<>();
    for (int i = 0; nodes.size() < cluster.nodes.size() || written.size() < 30; i++) {
      counters.incr("k" + i);
      written.add("k" + i);
      nodes.add(cluster.nodeFor(group + ":k" + i));
    }
    assertThat(counters.keys("k")).containsExactlyInAnyOrderElementsOf(written);
  }
}
