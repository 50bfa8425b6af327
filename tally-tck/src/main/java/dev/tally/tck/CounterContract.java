package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.tally.CounterOverflowException;
import dev.tally.Counters;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.TransactionResult;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The counter semantics of DESIGN §2, one rule a test, for every store that keeps values.
 * Expiry tests use short ttls and {@link #advance}, so stores with server-side expiry can run
 * them in real time.
 */
public abstract class CounterContract extends TallyFixture {
  private static final Duration TTL = Duration.ofMillis(300);
  private static final Duration PAST_TTL = Duration.ofMillis(450);

  // ------------------------------------------------------------------ incr and decr

  @Test
  public void incrOnMissingKeyStartsAtZero() {
    assertThat(counters.incr("k")).isEqualTo(1);
    assertThat(counters.get("k")).hasValue(1);
  }

  @Test
  public void incrReturnsTheNewValue() {
    assertThat(counters.incr("k", 10)).isEqualTo(10);
    assertThat(counters.incr("k", 5)).isEqualTo(15);
    assertThat(counters.decr("k", 14)).isEqualTo(1);
    assertThat(counters.decr("k")).isEqualTo(0);
    assertThat(counters.incr("k", -3)).isEqualTo(-3);
  }

  @Test
  public void incrOnMissingKeyIsDefaultPlusDelta() {
    assertThat(counters.incr("a", 1, 10)).isEqualTo(11);
    assertThat(counters.incr("a", 1, 10)).isEqualTo(12); // default only applies when missing
  }

  @Test
  public void decrDoesNotNegateTheDefault() {
    assertThat(counters.decr("k", 1, 10)).isEqualTo(9);
  }

  @Test
  public void incrExistingOnMissingKeyThrowsAndCreatesNothing() {
    assertThatThrownBy(() -> counters.incrExisting("missing", 1))
        .isInstanceOf(KeyNotFoundException.class)
        .hasMessageContaining("missing");
    assertThat(counters.get("missing")).isEmpty();
    assertThatThrownBy(() -> counters.decrExisting("missing", 1))
        .isInstanceOf(KeyNotFoundException.class);
  }

  @Test
  public void incrExistingOnLiveKeyAdds() {
    counters.put("k", 5);
    assertThat(counters.incrExisting("k", 2)).isEqualTo(7);
    assertThat(counters.decrExisting("k", 10)).isEqualTo(-3);
  }

  @Test
  public void incrExistingOnExpiredKeyThrows() {
    counters.put("k", 5, TTL);
    advance(PAST_TTL);
    assertThatThrownBy(() -> counters.incrExisting("k", 1)).isInstanceOf(KeyNotFoundException.class);
    assertThat(counters.get("k")).isEmpty();
  }

  // ------------------------------------------------------------------ expiry

  @Test
  public void incrOnExpiredKeyRestartsFromDefaultWithNoExpiry() {
    counters.put("k", 100, TTL);
    advance(PAST_TTL);
    assertThat(counters.incr("k", 1, 7)).isEqualTo(8);
    assertThat(counters.ttl("k")).isEmpty();
    advance(PAST_TTL);
    assertThat(counters.get("k")).hasValue(8);
  }

  @Test
  public void incrKeepsALiveKeysExpiry() {
    counters.put("k", 1, TTL);
    assertThat(counters.incr("k")).isEqualTo(2);
    assertThat(counters.ttl("k")).hasValueSatisfying(d -> assertThat(d).isPositive().isLessThanOrEqualTo(TTL));
    advance(PAST_TTL);
    assertThat(counters.get("k")).isEmpty();
  }

  @Test
  public void getOfExpiredKeyIsEmpty() {
    counters.put("k", 1, TTL);
    assertThat(counters.get("k")).hasValue(1);
    advance(PAST_TTL);
    assertThat(counters.get("k")).isEmpty();
    assertThat(counters.getDouble("k")).isEmpty();
  }

  @Test
  public void putWithoutTtlReplacesAnExpiry() {
    counters.put("k", 1, TTL);
    counters.put("k", 2);
    assertThat(counters.ttl("k")).isEmpty();
    advance(PAST_TTL);
    assertThat(counters.get("k")).hasValue(2);
  }

  @Test
  public void ttlOfMissingPermanentAndExpiringKeys() {
    assertThat(counters.ttl("missing")).isEmpty();
    counters.put("permanent", 1);
    assertThat(counters.ttl("permanent")).isEmpty();
    counters.put("expiring", 1, Duration.ofDays(40));
    assertThat(counters.ttl("expiring")).hasValueSatisfying(d ->
        assertThat(d).isLessThanOrEqualTo(Duration.ofDays(40)).isGreaterThan(Duration.ofDays(39)));
  }

  @Test
  public void touchSetsTheExpiryAndKeepsTheValue() {
    counters.put("k", 42);
    assertThat(counters.touch("k", TTL)).isTrue();
    assertThat(counters.get("k")).hasValue(42);
    assertThat(counters.ttl("k")).isPresent();
    advance(PAST_TTL);
    assertThat(counters.get("k")).isEmpty();
  }

  @Test
  public void touchWithNullTtlMakesAKeyPermanent() {
    counters.put("k", 42, TTL);
    assertThat(counters.touch("k", null)).isTrue();
    advance(PAST_TTL);
    assertThat(counters.get("k")).hasValue(42);
  }

  @Test
  public void touchOfMissingOrExpiredKeyReturnsFalse() {
    assertThat(counters.touch("missing", TTL)).isFalse();
    assertThat(counters.get("missing")).isEmpty();
    counters.put("k", 1, TTL);
    advance(PAST_TTL);
    assertThat(counters.touch("k", Duration.ofMinutes(1))).isFalse();
    assertThat(counters.get("k")).isEmpty();
  }

  // ------------------------------------------------------------------ add

  @Test
  public void addSetsAMissingKeyOnly() {
    assertThat(counters.add("k", 1000, Duration.ofDays(40))).isTrue();
    assertThat(counters.add("k", 5, Duration.ofDays(40))).isFalse();
    assertThat(counters.get("k")).hasValue(1000);
  }

  @Test
  public void addWinsOverAnExpiredKey() {
    counters.put("k", 1, TTL);
    advance(PAST_TTL);
    assertThat(counters.add("k", 2, null)).isTrue();
    assertThat(counters.get("k")).hasValue(2);
    assertThat(counters.ttl("k")).isEmpty();
  }

  @Test
  public void addedKeyExpires() {
    assertThat(counters.add("k", 1, TTL)).isTrue();
    advance(PAST_TTL);
    assertThat(counters.get("k")).isEmpty();
  }

  // ------------------------------------------------------------------ pop and delete

  @Test
  public void popReadsAndDeletes() {
    counters.incr("k", 7);
    assertThat(counters.pop("k")).hasValue(7);
    assertThat(counters.get("k")).isEmpty();
    assertThat(counters.pop("k")).isEmpty();
    assertThat(counters.incr("k")).isEqualTo(1); // a fresh counter
  }

  @Test
  public void popOfExpiredKeyIsEmpty() {
    counters.put("k", 1, TTL);
    advance(PAST_TTL);
    assertThat(counters.pop("k")).isEmpty();
  }

  @Test
  public void deleteReturnsWhetherTheKeyWasLive() {
    counters.put("k", 1);
    assertThat(counters.delete("k")).isTrue();
    assertThat(counters.delete("k")).isFalse();
    assertThat(counters.get("k")).isEmpty();
    counters.put("e", 1, TTL);
    advance(PAST_TTL);
    assertThat(counters.delete("e")).isFalse();
  }

  // ------------------------------------------------------------------ keys

  @Test
  public void keysListsLiveKeysWithThePrefix() {
    counters.incr("views:episode:512");
    counters.incr("views:episode:513");
    counters.incr("downloads:x");
    counters.put("views:episode:old", 1, TTL);
    advance(PAST_TTL);
    assertThat(counters.keys("views:episode:"))
        .containsExactlyInAnyOrder("views:episode:512", "views:episode:513");
    assertThat(counters.keys("")).hasSize(3);
    assertThat(counters.keys("nothing")).isEmpty();
  }

  @Test
  public void keysTreatsPatternCharactersLiterally() {
    counters.incr("a*b");
    counters.incr("a?c");
    counters.incr("a[x]");
    counters.incr("axb");
    assertThat(counters.keys("a*")).containsExactly("a*b");
    assertThat(counters.keys("a?")).containsExactly("a?c");
    assertThat(counters.keys("a[")).containsExactly("a[x]");
  }

  @Test
  public void groupsPrefixTheirKeys() {
    String group = uniqueGroup();
    Counters views = tally.counters(group);
    views.incr("episode:512", 3);
    assertThat(tally.counters().get(group + ":episode:512")).hasValue(3);
    assertThat(views.keys("episode:")).containsExactly("episode:512");
    assertThat(tally.counters(uniqueGroup()).get("episode:512")).isEmpty();
  }

  // ------------------------------------------------------------------ numbers

  @Test
  public void integerRangeIsSigned64Bit() {
    counters.put("max", Long.MAX_VALUE);
    assertThat(counters.get("max")).hasValue(Long.MAX_VALUE);
    counters.put("min", Long.MIN_VALUE + 1);
    assertThat(counters.decr("min")).isEqualTo(Long.MIN_VALUE);
    assertThat(counters.get("min")).hasValue(Long.MIN_VALUE);
    assertThat(counters.incr("min")).isEqualTo(Long.MIN_VALUE + 1);
    counters.put("min2", Long.MIN_VALUE);
    assertThat(counters.pop("min2")).hasValue(Long.MIN_VALUE);
  }

  @Test
  public void overflowIsAnErrorThatChangesNothing() {
    counters.put("k", Long.MAX_VALUE - 1);
    assertThatThrownBy(() -> counters.incr("k", 2))
        .isInstanceOf(CounterOverflowException.class)
        .hasMessageContaining("64-bit");
    assertThat(counters.get("k")).hasValue(Long.MAX_VALUE - 1);
    counters.put("n", Long.MIN_VALUE + 1);
    assertThatThrownBy(() -> counters.decr("n", 2)).isInstanceOf(CounterOverflowException.class);
    assertThat(counters.get("n")).hasValue(Long.MIN_VALUE + 1);
  }

  @Test
  public void overflowOfDefaultPlusDeltaCreatesNothing() {
    assertThatThrownBy(() -> counters.incr("k", 1, Long.MAX_VALUE))
        .isInstanceOf(CounterOverflowException.class);
    assertThat(counters.get("k")).isEmpty();
  }

  @Test
  public void overflowKeepsTheExpiry() {
    counters.put("k", Long.MAX_VALUE, TTL);
    assertThatThrownBy(() -> counters.incr("k")).isInstanceOf(CounterOverflowException.class);
    advance(PAST_TTL);
    assertThat(counters.get("k")).isEmpty();
  }

  @Test
  public void floatingDeltaMakesAFloatingCounter() {
    counters.incr("k", 2);
    assertThat(counters.incr("k", 0.5)).isEqualTo(2.5);
    assertThat(counters.getDouble("k")).hasValue(2.5);
    assertThat(counters.incr("k", 0.25, 100.0)).isEqualTo(2.75);
    assertThat(counters.incr("new", 1.5, 10.0)).isEqualTo(11.5);
  }

  @Test
  public void integerOperationsRefuseAFloatingCounterAndChangeNothing() {
    counters.put("f", 1.5, null);
    assertThatThrownBy(() -> counters.incr("f")).isInstanceOf(NotAnIntegerException.class);
    assertThatThrownBy(() -> counters.get("f")).isInstanceOf(NotAnIntegerException.class);
    assertThatThrownBy(() -> counters.pop("f")).isInstanceOf(NotAnIntegerException.class);
    assertThat(counters.getDouble("f")).hasValue(1.5);
    assertThat(counters.popDouble("f")).hasValue(1.5);
    assertThat(counters.getDouble("f")).isEmpty();
  }

  @Test
  public void floatingOverflowToInfinityIsAnError() {
    counters.put("f", Double.MAX_VALUE, null);
    assertThatThrownBy(() -> counters.incr("f", Double.MAX_VALUE))
        .isInstanceOf(CounterOverflowException.class);
    assertThat(counters.getDouble("f")).hasValue(Double.MAX_VALUE);
  }

  @Test
  public void floatingCountersKeepTheirExpiry() {
    counters.put("f", 1.0, TTL);
    assertThat(counters.incr("f", 1.0)).isEqualTo(2.0);
    advance(PAST_TTL);
    assertThat(counters.getDouble("f")).isEmpty();
    assertThat(counters.incr("f", 0.5, 1.0)).isEqualTo(1.5);
  }

  @Test
  public void floatingValuesSurviveARoundTrip() {
    for (double v : new double[] {0.1, -0.0, 1e-300, 123456789.123, -2.5e15}) {
      counters.put("f", v, null);
      assertThat(counters.getDouble("f").orElseThrow()).isCloseTo(v, within(Math.abs(v) * 1e-15));
    }
    assertThat(counters.incr("g", 0.1)).isCloseTo(0.1, within(1e-15));
    assertThat(counters.incr("g", 0.2)).isCloseTo(0.3, within(1e-15));
  }

  @Test
  public void addAndPutAcceptFloatingValues() {
    assertThat(counters.add("f", 0.5, null)).isTrue();
    assertThat(counters.getDouble("f")).hasValue(0.5);
    assertThat(counters.ttl("f")).isEqualTo(Optional.empty());
  }

  // ------------------------------------------------------------------ transactions

  @Nested
  public class Transactions {

    @Test
    public void appliesEveryOperationAndReturnsEachResult() {
      counters.put("b", 5);
      TransactionResult r = counters.transaction(tx -> tx
          .incr("a")
          .incr("b", 2)
          .decr("c", 3)
          .incr("d", 0.5, 1.0)
          .put("e", 9, null)
          .get("b")
          .get("missing")
          .delete("b"));
      assertThat(r.size()).isEqualTo(8);
      assertThat(r.getLong(0)).isEqualTo(1);
      assertThat(r.getLong(1)).isEqualTo(7);
      assertThat(r.getLong(2)).isEqualTo(-3);
      assertThat(r.getDouble(3)).isEqualTo(1.5);
      assertThat(r.getLong(4)).isEqualTo(9);
      assertThat(r.getLong(5)).isEqualTo(7);
      assertThat(r.isPresent(6)).isFalse();
      assertThat(r.getLong(7)).isEqualTo(1);
      assertThat(counters.get("a")).hasValue(1);
      assertThat(counters.get("b")).isEmpty();
      assertThat(counters.get("c")).hasValue(-3);
      assertThat(counters.getDouble("d")).hasValue(1.5);
      assertThat(counters.get("e")).hasValue(9);
    }

    @Test
    public void laterOperationsSeeEarlierOnes() {
      TransactionResult r = counters.transaction(tx -> tx.incr("k", 1, 10).incr("k").get("k"));
      assertThat(r.getLong(0)).isEqualTo(11);
      assertThat(r.getLong(1)).isEqualTo(12);
      assertThat(r.getLong(2)).isEqualTo(12);
    }

    @Test
    public void aFailingOperationAppliesNone() {
      counters.put("a", 1);
      assertThatThrownBy(() -> counters.transaction(tx -> tx
          .incr("a")
          .incr("b")
          .incrExisting("missing", 1)))
          .isInstanceOf(KeyNotFoundException.class);
      assertThat(counters.get("a")).hasValue(1);
      assertThat(counters.get("b")).isEmpty();
    }

    @Test
    public void overflowAppliesNone() {
      counters.put("max", Long.MAX_VALUE);
      assertThatThrownBy(() -> counters.transaction(tx -> tx.incr("a").incr("max")))
          .isInstanceOf(CounterOverflowException.class);
      assertThat(counters.get("a")).isEmpty();
      assertThat(counters.get("max")).hasValue(Long.MAX_VALUE);
    }

    @Test
    public void incrementsKeepExpiryAndRestartExpiredKeys() {
      counters.put("live", 1, Duration.ofMinutes(10));
      counters.put("expired", 100, TTL);
      advance(PAST_TTL);
      TransactionResult r = counters.transaction(tx -> tx.incr("live").incr("expired", 1, 5));
      assertThat(r.getLong(0)).isEqualTo(2);
      assertThat(r.getLong(1)).isEqualTo(6);
      assertThat(counters.ttl("live")).isPresent();
      assertThat(counters.ttl("expired")).isEmpty();
    }

    @Test
    public void operationsAfterTheCallbackAreRefused() {
      var leaked = new dev.tally.Transaction[1];
      counters.transaction(tx -> {
        leaked[0] = tx;
        tx.incr("a");
      });
      assertThatThrownBy(() -> leaked[0].incr("b")).isInstanceOf(IllegalStateException.class);
    }

    @Test
    public void anEmptyTransactionIsRefused() {
      assertThatThrownBy(() -> counters.transaction(tx -> {}))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  // ------------------------------------------------------------------ asynchronous API

  @Nested
  public class Async {

    @Test
    public void everyOperationHasTheSameSemantics() throws Exception {
      var async = counters.async();
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
      assertThat(async.transaction(tx -> tx.incr("t").incr("t")).toCompletableFuture().get().getLong(1))
          .isEqualTo(2);
      assertThat(async.sync().get("t")).hasValue(2);
    }

    @Test
    public void failuresCompleteTheStageExceptionally() {
      var stage = counters.async().incrExisting("missing", 1).toCompletableFuture();
      assertThatThrownBy(stage::join).hasCauseInstanceOf(KeyNotFoundException.class);
      counters.put("max", Long.MAX_VALUE);
      var overflow = counters.async().incr("max").toCompletableFuture();
      assertThatThrownBy(overflow::join).hasCauseInstanceOf(CounterOverflowException.class);
    }
  }
}
