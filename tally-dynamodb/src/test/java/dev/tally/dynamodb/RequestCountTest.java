package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.tck.ManualTimeSource;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Each counter operation, and each uncontended limiter decision, is one request. */
class RequestCountTest {
  private final RequestCounter requests = new RequestCounter();
  private final ManualTimeSource clock = new ManualTimeSource();
  private Tally tally;
  private Counters counters;

  @BeforeEach
  void open() {
    tally = open(clock);
    counters = tally.counters("count-" + UUID.randomUUID());
    requests.take(); // opening describes the table
  }

  private Tally open(ManualTimeSource c) {
    CountingStoreProvider.counter = requests;
    String uri = Dynalite.uri().replaceFirst("^dynamodb:", "dynamodb-counted:");
    return Tally.builder(uri).timeSource(c).build();
  }

  @AfterEach
  void close() {
    tally.close();
  }

  @Test
  void everyCounterOperationIsOneRequest() {
    assertThat(counters.incr("k")).isEqualTo(1);
    assertThat(requests.take()).containsExactly("UpdateItem");
    assertThat(counters.incr("k", 5, 100)).isEqualTo(6);
    assertThat(requests.take()).containsExactly("UpdateItem");
    assertThat(counters.decr("k", 2)).isEqualTo(4);
    assertThat(requests.take()).containsExactly("UpdateItem");
    assertThat(counters.incr("f", 0.5)).isEqualTo(0.5);
    assertThat(requests.take()).containsExactly("UpdateItem");
    assertThat(counters.get("k")).hasValue(4);
    assertThat(requests.take()).containsExactly("GetItem");
    assertThat(counters.add("a", 10, Duration.ofDays(1))).isTrue();
    assertThat(requests.take()).containsExactly("UpdateItem"); // not PutItem: the item's ids stay
    assertThat(counters.add("a", 11, Duration.ofDays(1))).isFalse();
    // The write fails its condition; the item that failed it tells a counter from a limiter's
    // name: DynamoDB returns it with the failure, dynalite is read.
    assertThat(requests.take()).isIn(List.of("UpdateItem"), List.of("UpdateItem", "GetItem"));
    assertThat(counters.pop("k")).hasValue(4);
    assertThat(requests.take()).containsExactly("DeleteItem");
    assertThat(counters.pop("k")).isEmpty();
    assertThat(requests.take()).containsExactly("DeleteItem");
    counters.put("p", 3);
    assertThat(requests.take()).containsExactly("UpdateItem");
    assertThat(counters.touch("p", Duration.ofMinutes(1))).isTrue();
    assertThat(requests.take()).containsExactly("UpdateItem");
    assertThat(counters.ttl("p")).isPresent();
    assertThat(requests.take()).containsExactly("GetItem");
    assertThat(counters.delete("p")).isTrue();
    assertThat(requests.take()).containsExactly("DeleteItem");
  }

  @Test
  void anIncrementWithAnIdIsItsClaimAndOneWrite() {
    Counters once = counters.withOperationId("count-" + UUID.randomUUID());
    assertThat(once.incr("k")).isEqualTo(1);
    assertThat(requests.take()).containsExactly("PutItem", "UpdateItem");
    assertThat(once.incr("k")).isEqualTo(1);
    // The repeat's write fails on the record; DynamoDB returns it with the failure, dynalite is read.
    assertThat(requests.take()).isIn(List.of("PutItem", "UpdateItem"), List.of("PutItem", "UpdateItem", "GetItem"));
    Counters pop = counters.withOperationId("count-" + UUID.randomUUID());
    assertThat(pop.pop("k")).hasValue(1);
    assertThat(requests.take()).as("the claim, a read, a conditional write")
        .containsExactly("PutItem", "GetItem", "UpdateItem");
    counters.incr("k");
    requests.take();
    assertThat(counters.pop("k")).as("a plain pop of an item with live ids keeps them").hasValue(1);
    List<String> sent = requests.take();
    assertThat(sent).as("the delete is refused, then the counter alone is removed").first().isEqualTo("DeleteItem");
    assertThat(sent).last().isEqualTo("UpdateItem");
    assertThat(pop.pop("k")).as("the repeat finds its record").hasValue(1);
  }

  @Test
  void failuresThatNeedTheItemCostOneMoreRequest() {
    counters.put("max", Long.MAX_VALUE);
    requests.take();
    try {
      counters.incr("max");
    } catch (dev.tally.CounterOverflowException expected) {
      // DynamoDB returns the failed item with the failure; dynalite does not, so it is read
      assertThat(requests.take()).isIn(List.of("UpdateItem"), List.of("UpdateItem", "GetItem"));
    }
    counters.put("e", 5, Duration.ofMillis(10));
    clock.advance(Duration.ofSeconds(1));
    requests.take();
    assertThat(counters.incr("e", 1, 7)).isEqualTo(8); // expired: restarts from the default
    List<String> sent = requests.take();
    assertThat(sent).first().isEqualTo("UpdateItem");
    assertThat(sent).last().isEqualTo("UpdateItem");
    assertThat(sent).hasSizeBetween(2, 3);
  }

  @Test
  void anUncontendedLimiterDecisionIsOneRequest() {
    RateLimiter l = tally.limiter("count-limiter-" + UUID.randomUUID(), Limit.tokenBucket(5, Duration.ofHours(1)));
    assertThat(l.tryAcquire()).isTrue();
    assertThat(requests.take()).as("the first decision creates the state").containsExactly("PutItem");
    for (int i = 0; i < 4; i++) {
      assertThat(l.tryAcquire()).isTrue();
      assertThat(requests.take()).as("grant %d", i + 2).containsExactly("PutItem");
    }
    assertThat(l.tryAcquire()).isFalse();
    assertThat(requests.take()).as("a denial is confirmed by a read").containsExactly("GetItem");
    assertThat(l.available()).isZero();
    assertThat(requests.take()).containsExactly("GetItem");
    l.refund(2);
    assertThat(requests.take()).containsExactly("PutItem");
    l.reset();
    assertThat(requests.take()).containsExactly("DeleteItem");
  }

  @Test
  void aSecondClientLearnsTheStateFromItsFirstFailedWrite() {
    String name = "count-limiter-" + UUID.randomUUID();
    Limit limit = Limit.tokenBucket(5, Duration.ofHours(1));
    assertThat(tally.limiter(name, limit).tryAcquire(2)).isTrue();
    try (Tally other = open(clock)) {
      requests.take();
      assertThat(other.limiter(name, limit).tryAcquire(3)).isTrue();
      // DynamoDB: the failed PutItem carries the item. dynalite: one GetItem more.
      List<String> sent = requests.take();
      assertThat(sent).first().isEqualTo("PutItem");
      assertThat(sent).last().isEqualTo("PutItem");
      assertThat(sent).hasSizeBetween(2, 3);
      assertThat(other.limiter(name, limit).tryAcquire()).isFalse();
    }
    assertThat(tally.limiter(name, limit).tryAcquire()).as("the first client's cache is stale, never wrong").isFalse();
  }
}
