package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.KeyNotFoundException;
import dev.tally.Limit;
import dev.tally.OperationIdConflictException;
import dev.tally.RateLimiter;
import dev.tally.TransactionResult;
import dev.tally.spi.OperationId;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Operation ids: a mutating call that carries an id counts once within the store's retention
 * window, however often it is repeated, from however many threads, and returns what the first
 * call returned. Ids expire on the store's clock, which is the kit's clock here, so the window
 * is crossed by moving that clock, not by waiting.
 */
public abstract class OperationIdContract extends TallyFixture {

  private static String id() {
    return "op-" + UUID.randomUUID();
  }

  @Test
  public void aRepeatedIncrementReturnsTheFirstResultAndAppliesNothing() {
    counters.incr("k", 10);
    String id = id();
    assertThat(counters.withOperationId(id).incr("k", 5)).isEqualTo(15);
    counters.incr("k", 100); // another caller moves the value on
    assertThat(counters.withOperationId(id).incr("k", 5)).as("the first result, not 120").isEqualTo(15);
    assertThat(counters.get("k")).hasValue(115);
  }

  @Test
  public void distinctIdsEachApply() {
    for (int i = 0; i < 10; i++) {
      counters.withOperationId(id()).incr("k");
    }
    assertThat(counters.get("k")).hasValue(10);
  }

  @Test
  public void everyMutationReplays() {
    Counters c = counters;
    String put = id();
    c.withOperationId(put).put("p", 7);
    c.put("p", 8);
    c.withOperationId(put).put("p", 7);
    assertThat(c.get("p")).as("a replayed put writes nothing").hasValue(8);

    String add = id();
    assertThat(c.withOperationId(add).add("a", 1, Duration.ofHours(2))).isTrue();
    assertThat(c.withOperationId(add).add("a", 1, Duration.ofHours(2))).as("the first answer").isTrue();
    assertThat(c.add("a", 1, Duration.ofHours(2))).isFalse();

    c.put("q", 3);
    String pop = id();
    assertThat(c.withOperationId(pop).pop("q")).hasValue(3);
    c.put("q", 4);
    assertThat(c.withOperationId(pop).pop("q")).as("the value popped first").hasValue(3);
    assertThat(c.get("q")).as("the second value stays").hasValue(4);

    String del = id();
    assertThat(c.withOperationId(del).delete("q")).isTrue();
    c.put("q", 5);
    assertThat(c.withOperationId(del).delete("q")).isTrue();
    assertThat(c.get("q")).hasValue(5);

    String touch = id();
    assertThat(c.withOperationId(touch).touch("q", Duration.ofHours(2))).isTrue();
    assertThat(c.withOperationId(touch).touch("q", Duration.ofHours(2))).isTrue();

    String f = id();
    assertThat(c.withOperationId(f).incr("f", 0.5, 0.0)).isEqualTo(0.5);
    assertThat(c.withOperationId(f).incr("f", 0.5, 0.0)).isEqualTo(0.5);
    assertThat(c.getDouble("f")).hasValue(0.5);
  }

  @Test
  public void concurrentDuplicatesApplyOnce() {
    int threads = 8;
    int ids = 50;
    String[] opIds = new String[ids];
    for (int i = 0; i < ids; i++) {
      opIds[i] = id();
    }
    Set<String> answers = ConcurrentHashMap.newKeySet();
    // Every thread sends every id: each id reaches the store 8 times, mostly at once.
    Concurrently.run(threads, ids, (t, i) ->
        answers.add(opIds[i] + "=" + counters.withOperationId(opIds[i]).incr("k")));
    assertThat(counters.get("k")).hasValue(ids);
    assertThat(answers).as("one answer per id, whichever thread asked").hasSize(ids);
  }

  @Test
  public void theSameIdForAnotherOperationIsRefusedAndAppliesNothing() {
    String id = id();
    counters.withOperationId(id).incr("a", 1);
    assertThatThrownBy(() -> counters.withOperationId(id).incr("b", 1))
        .isInstanceOf(OperationIdConflictException.class)
        .hasMessageContaining(id);
    assertThatThrownBy(() -> counters.withOperationId(id).incr("a", 2))
        .isInstanceOf(OperationIdConflictException.class);
    assertThat(counters.get("b")).isEmpty();
    assertThat(counters.get("a")).hasValue(1);
  }

  @Test
  public void aTransactionWithAnIdAppliesOnceAndReplaysItsResults() {
    String id = id();
    TransactionResult first = counters.withOperationId(id).transaction(tx -> tx.incr("x", 2).incr("y", 3).get("x"));
    TransactionResult again = counters.withOperationId(id).transaction(tx -> tx.incr("x", 2).incr("y", 3).get("x"));
    assertThat(first.getLong(0)).isEqualTo(2);
    assertThat(first.getLong(2)).isEqualTo(2);
    assertThat(again.toString()).isEqualTo(first.toString());
    assertThat(counters.get("x")).hasValue(2);
    assertThat(counters.get("y")).hasValue(3);
  }

  @Test
  public void aCallThatFailedRecordsNothingSoItsRetryApplies() {
    String id = id();
    Counters once = counters.withOperationId(id);
    assertThatThrownBy(() -> once.incrExisting("late", 1)).isInstanceOf(KeyNotFoundException.class);
    counters.put("late", 10);
    assertThat(once.incrExisting("late", 1)).isEqualTo(11);
    assertThat(once.incrExisting("late", 1)).isEqualTo(11);
  }

  /** A failed call records nothing: its id is as free as one never used, for any operation. */
  @Test
  public void anIdWhoseCallFailedIsFreeForAnotherOperation() {
    String id = id();
    assertThatThrownBy(() -> counters.withOperationId(id).incrExisting("missing", 1))
        .isInstanceOf(KeyNotFoundException.class);
    assertThat(counters.withOperationId(id).incr("other", 5)).isEqualTo(5);
    assertThat(counters.withOperationId(id).incr("other", 5)).as("a retry of the second call").isEqualTo(5);
    assertThat(counters.get("other")).hasValue(5);
    assertThat(counters.get("missing")).isEmpty();
  }

  /** After the retention window the id is forgotten: a repeat applies again (documented). */
  @Test
  public void aRepeatAfterTheRetentionWindowAppliesAgain() {
    String id = id();
    assertThat(counters.withOperationId(id).incr("k")).isEqualTo(1);
    clock.advance(OperationId.DEFAULT_RETENTION.minusSeconds(1));
    assertThat(counters.withOperationId(id).incr("k")).as("inside the window").isEqualTo(1);
    clock.advance(Duration.ofSeconds(2));
    assertThat(counters.withOperationId(id).incr("k")).as("after the window").isEqualTo(2);
  }

  @Test
  public void badIdsAreRefusedBeforeAnyIo() {
    assertThatThrownBy(() -> counters.withOperationId("")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> counters.withOperationId("x".repeat(OperationId.MAX_LENGTH + 1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("limit is " + OperationId.MAX_LENGTH);
    assertThatThrownBy(() -> counters.withOperationId("a b")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("space");
    assertThatThrownBy(() -> counters.withOperationId(null)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> tally.limiter("l", Limit.tokenBucket(2, Duration.ofMinutes(1))).withOperationId("é"))
        .isInstanceOf(IllegalArgumentException.class);
    String longest = id();
    longest += "x".repeat(OperationId.MAX_LENGTH - longest.length()); // unique: stores may be shared
    assertThat(counters.withOperationId(longest).incr("k")).isEqualTo(1);
    assertThat(counters.keys("")).containsExactly("k");
  }

  @Test
  public void aRepeatedAcquireReturnsTheFirstDecisionAndConsumesOnce() {
    RateLimiter l = tally.limiter(counters.name() + ":limiter", Limit.tokenBucket(5, Duration.ofHours(1)));
    String id = id();
    Decision first = l.withOperationId(id).decide(2);
    assertThat(first.remaining()).isEqualTo(3);
    assertThat(l.withOperationId(id).decide(2)).isEqualTo(first);
    assertThat(l.available()).isEqualTo(3);

    String refund = id();
    l.withOperationId(refund).refund(1);
    l.withOperationId(refund).refund(1);
    assertThat(l.available()).isEqualTo(4);
  }

  @Test
  public void concurrentDuplicateAcquiresConsumeOnce() {
    RateLimiter l = tally.limiter(counters.name() + ":limiter", Limit.tokenBucket(1_000, Duration.ofHours(1)));
    int ids = 40;
    String[] opIds = new String[ids];
    for (int i = 0; i < ids; i++) {
      opIds[i] = id();
    }
    AtomicInteger calls = new AtomicInteger();
    Concurrently.run(6, ids, (t, i) -> {
      l.withOperationId(opIds[i]).decide(1);
      calls.incrementAndGet();
    });
    assertThat(calls).hasValue(6 * ids);
    assertThat(l.available()).isEqualTo(1_000 - ids);
  }

  @Test
  public void theAsyncApiCarriesIdsToo() {
    String id = id();
    long first = counters.async().withOperationId(id).incr("k", 3).toCompletableFuture().join();
    long again = counters.withOperationId(id).incr("k", 3);
    assertThat(again).isEqualTo(first).isEqualTo(3);
    RateLimiter l = tally.limiter(counters.name() + ":limiter", Limit.tokenBucket(5, Duration.ofHours(1)));
    String acquire = id();
    Decision d = l.async().withOperationId(acquire).decide(1).toCompletableFuture().join();
    assertThat(l.withOperationId(acquire).decide(1)).isEqualTo(d);
    assertThat(l.available()).isEqualTo(4);
  }
}
