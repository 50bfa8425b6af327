package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.CounterOverflowException;
import dev.tally.Counters;
import dev.tally.Tally;
import dev.tally.tck.Concurrently;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Hot keys: counters under "hot:" spread over 8 items. */
class ShardedCounterTest {
  private final RequestCounter requests = new RequestCounter();
  private Tally tally;
  private Counters hot;
  private String group;

  @BeforeEach
  void open() {
    CountingStoreProvider.counter = requests;
    group = "hot-" + UUID.randomUUID().toString().substring(0, 8);
    tally = Tally.open(Dynalite.uri("shards=8", "shardPrefix=" + group + ":")
        .replaceFirst("^dynamodb:", "dynamodb-counted:"));
    hot = tally.counters(group);
    requests.take();
  }

  @AfterEach
  void close() {
    tally.close();
  }

  @Test
  void incrementsSpreadOverShardsAndReadsSumThem() {
    assertThat(hot.incr("views")).isEqualTo(1);
    assertThat(requests.take()).containsExactly("UpdateItem", "BatchGetItem");
    for (int i = 0; i < 40; i++) {
      hot.incr("views", 2);
    }
    assertThat(hot.get("views")).hasValue(81);
    assertThat(requests.take()).hasSize(81).last().isEqualTo("BatchGetItem");
    assertThat(tally.counters().keys(group + ":")).containsExactly(group + ":views");
    assertThat(hot.keys("")).containsExactly("views");
  }

  @Test
  void anOverflowIsRefusedByTheShardAndChangesNothing() {
    long share = Long.MAX_VALUE / 8; // each of the 8 shards holds at most this much
    assertThatThrownBy(() -> hot.incr("big", share + 1)).isInstanceOf(CounterOverflowException.class);
    assertThat(hot.get("big")).isEmpty();
    long total = 0;
    int refused = 0;
    for (int i = 0; i < 60; i++) { // fills shards at random until every one is full
      try {
        total = hot.incr("big", share / 4);
      } catch (CounterOverflowException e) {
        refused++;
        assertThat(hot.get("big")).as("after a refused increment").hasValue(total);
      }
    }
    assertThat(refused).isPositive();
    assertThat(hot.pop("big")).as("every shard popped, their sum exact").hasValue(total);
    assertThat(hot.get("big")).isEmpty();
  }

  @Test
  void concurrentIncrementsFromTwoStoresAreExact() {
    try (Tally other = Tally.open(Dynalite.uri("shards=8", "shardPrefix=" + group + ":"))) {
      Counters otherHot = other.counters(group);
      Concurrently.run(8, 50, (t, i) -> (t % 2 == 0 ? hot : otherHot).incr("views"));
    }
    assertThat(hot.get("views")).hasValue(400);
  }

  @Test
  void popFlushesEveryShardWithoutLosingACount() {
    AtomicLong flushed = new AtomicLong();
    Concurrently.run(4, 50, (t, i) -> {
      if (t == 0 && i % 10 == 0) {
        flushed.addAndGet(hot.pop("views").orElse(0));
      } else {
        hot.incr("views");
      }
    });
    flushed.addAndGet(hot.pop("views").orElse(0));
    assertThat(flushed.get()).isEqualTo(4 * 50 - 5);
    assertThat(hot.get("views")).isEmpty();
    assertThat(hot.delete("views")).isFalse();
  }

  @Test
  void whatShardedCountersCannotDoIsRefusedClearly() {
    assertThatThrownBy(() -> hot.incr("k", 1, 10)).isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("sharded");
    assertThatThrownBy(() -> hot.incrExisting("k", 1)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> hot.put("k", 1)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> hot.add("k", 1, Duration.ofDays(1))).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> hot.incr("k", 0.5)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> hot.touch("k", Duration.ofDays(1))).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> hot.transaction(tx -> tx.incr("k"))).isInstanceOf(UnsupportedOperationException.class);
    assertThat(requests.take()).isEmpty();
  }

  @Test
  void keysOutsideTheShardedPrefixesAreOrdinaryCounters() {
    Counters plain = tally.counters("plain-" + UUID.randomUUID());
    assertThat(plain.incr("k", 1, 10)).isEqualTo(11);
    assertThat(requests.take()).containsExactly("UpdateItem");
  }
}
