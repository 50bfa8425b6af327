package dev.tally.dynamodb;

import dev.tally.tck.Internals;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.AsyncCounters;
import dev.tally.CounterOverflowException;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.Tally;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The asynchronous API on DynamoDbAsyncClient (netty-nio-client is on the test class path):
 * the kit's async test without its transaction, which dynalite cannot run, plus the paths that
 * take more than one request.
 */
class AsyncStoreTest {
  /** Shared: each store's async client takes a couple of seconds to shut its event loop down. */
  private static Tally shared;

  @BeforeAll
  static void open() {
    // 200 increments at once to a local server: on a busy machine some wait seconds, so the call's
    // timeout is generous. These cases are about the async API's semantics, not lost answers
    // (LostAnswerTest and RetryTest are): in full-suite runs dynalite has twice closed a pooled
    // connection of the async client under a request, which with retryLost=false reaches the
    // caller as "may or may not have been applied". With retryLost=true the SDK re-sends it, and
    // a re-sent write that had applied would still fail these cases, as a count one too high.
    shared = Tally.open(Dynalite.uri("timeout=30000", "retryLost=true"));
  }

  @AfterAll
  static void close() {
    shared.close();
  }

  @Test
  void theStoreIsNonBlockingWhenAnAsyncHttpClientIsPresent() {
    assertThat(Internals.storeOf(shared).async()).isInstanceOf(AsyncDynamoDbStore.class);
    try (Tally tally = Tally.open(Dynalite.uri("async=off"))) {
      assertThat(Internals.storeOf(tally).async()).isNull();
    }
  }

  @Test
  void everyOperationHasTheSameSemantics() throws Exception {
    AsyncCounters async = shared.counters("async-" + UUID.randomUUID()).async();
    assertThat(async.incr("k", 10).toCompletableFuture().get()).isEqualTo(10);
    assertThat(async.incr("k", 1, 100).toCompletableFuture().get()).isEqualTo(11);
    assertThat(async.decr("k", 1).toCompletableFuture().get()).isEqualTo(10);
    assertThat(async.get("k").toCompletableFuture().get()).isEqualTo(OptionalLong.of(10));
    assertThat(async.add("k", 1, null).toCompletableFuture().get()).isFalse();
    assertThat(async.touch("k", Duration.ofMinutes(5)).toCompletableFuture().get()).isTrue();
    assertThat(async.ttl("k").toCompletableFuture().get()).isPresent();
    assertThat(async.keys("").toCompletableFuture().get()).containsExactly("k");
    assertThat(async.pop("k").toCompletableFuture().get()).isEqualTo(OptionalLong.of(10));
    assertThat(async.incr("f", 0.5).toCompletableFuture().get()).isEqualTo(0.5);
    assertThat(async.popDouble("f").toCompletableFuture().get()).isEqualTo(OptionalDouble.of(0.5));
    async.put("p", 3).toCompletableFuture().get();
    assertThat(async.delete("p").toCompletableFuture().get()).isTrue();
    assertThat(async.incr("big", 1e300, 1e300).toCompletableFuture().get()).isEqualTo(2e300);
  }

  @Test
  void failuresCompleteTheStageExceptionally() {
    var c = shared.counters("async-" + UUID.randomUUID());
    assertThatThrownBy(c.async().incrExisting("missing", 1).toCompletableFuture()::join)
        .hasCauseInstanceOf(KeyNotFoundException.class);
    c.put("max", Long.MAX_VALUE);
    assertThatThrownBy(c.async().incr("max").toCompletableFuture()::join)
        .hasCauseInstanceOf(CounterOverflowException.class);
    c.put("f", 1.5, null);
    assertThatThrownBy(c.async().pop("f").toCompletableFuture()::join)
        .hasCauseInstanceOf(NotAnIntegerException.class);
    assertThat(c.getDouble("f")).hasValue(1.5);
  }

  @Test
  void anExpiredCounterRestartsFromTheDefault() throws Exception {
    dev.tally.tck.ManualTimeSource clock = new dev.tally.tck.ManualTimeSource();
    // retryLost=true for the reason given in open().
    try (Tally tally = Tally.builder(Dynalite.uri("retryLost=true")).timeSource(clock).build()) {
      AsyncCounters async = tally.counters("async-" + UUID.randomUUID()).async();
      async.put("k", 100, Duration.ofSeconds(1)).toCompletableFuture().get();
      clock.advance(Duration.ofSeconds(2));
      assertThat(async.get("k").toCompletableFuture().get()).isEmpty();
      assertThat(async.incr("k", 1, 7).toCompletableFuture().get()).isEqualTo(8);
      assertThat(async.ttl("k").toCompletableFuture().get()).isEmpty();
      async.put("f", 1.5, Duration.ofSeconds(1)).toCompletableFuture().get();
      clock.advance(Duration.ofSeconds(2));
      assertThat(async.incr("f", 0.5, 10.0).toCompletableFuture().get()).isEqualTo(10.5);
    }
  }

  @Test
  void concurrentAsyncIncrementsAreExact() {
    AsyncCounters async = shared.counters("async-" + UUID.randomUUID()).async();
    List<CompletableFuture<Long>> all = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      all.add(async.incr("hot").toCompletableFuture());
    }
    CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).join();
    assertThat(all).extracting(CompletableFuture::join).doesNotHaveDuplicates();
    assertThat(async.sync().get("hot")).hasValue(200);
  }
}
