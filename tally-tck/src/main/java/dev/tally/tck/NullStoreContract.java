package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.CounterOverflowException;
import dev.tally.KeyNotFoundException;
import dev.tally.TransactionResult;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What a store that keeps nothing must answer. The suites that need stored values
 * ({@link CounterContract}, {@link SeedExamplesContract}, {@link CounterConcurrencyContract}) do
 * not apply to it by design; this suite states what it does instead, as the counting guide
 * describes a disabled cache: "its incr() returns default + delta every time, so every view
 * would be the first".
 */
public abstract class NullStoreContract extends TallyFixture {

  @Test
  public void incrReturnsDefaultPlusDeltaEveryTime() {
    assertThat(counters.incr("views:episode:512")).isEqualTo(1);
    assertThat(counters.incr("views:episode:512")).isEqualTo(1);
    assertThat(counters.incr("k", 5, 10)).isEqualTo(15);
    assertThat(counters.decr("k", 1, 10)).isEqualTo(9);
    assertThat(counters.incr("f", 0.5, 1.0)).isEqualTo(1.5);
  }

  @Test
  public void readsFindNothing() {
    counters.put("k", 5);
    assertThat(counters.get("k")).isEmpty();
    assertThat(counters.getDouble("k")).isEmpty();
    assertThat(counters.pop("k")).isEmpty();
    assertThat(counters.ttl("k")).isEmpty();
    assertThat(counters.keys("")).isEmpty();
    assertThat(counters.delete("k")).isFalse();
    assertThat(counters.touch("k", Duration.ofMinutes(1))).isFalse();
  }

  @Test
  public void addAlwaysSucceedsBecauseNothingIsEverThere() {
    assertThat(counters.add("k", 1, null)).isTrue();
    assertThat(counters.add("k", 1, null)).isTrue();
  }

  @Test
  public void noDefaultFormsFindNothing() {
    assertThatThrownBy(() -> counters.incrExisting("k", 1)).isInstanceOf(KeyNotFoundException.class);
  }

  @Test
  public void overflowOfDefaultPlusDeltaIsStillAnError() {
    assertThatThrownBy(() -> counters.incr("k", 1, Long.MAX_VALUE)).isInstanceOf(CounterOverflowException.class);
  }

  @Test
  public void limitersAlwaysAllowAndReportTheConfiguredLimit() {
    var limiter = tally.limiter("api", dev.tally.Limit.tokenBucket(5, java.time.Duration.ofMinutes(1)));
    for (int i = 0; i < 20; i++) {
      var d = limiter.decide(3);
      assertThat(d.allowed()).isTrue();
      assertThat(d.limit()).isEqualTo(5);
      assertThat(d.remaining()).isEqualTo(5);
    }
    assertThat(tally.leakyBucket("b", 2, java.time.Duration.ofHours(1)).add(2).remaining()).isEqualTo(2);
  }

  @Test
  public void aLimiterOfSeveralLimitsReportsEachOneFull() {
    var limiter = tally.limiter("two", dev.tally.Limit.tokenBucket(5, java.time.Duration.ofMinutes(1)),
        dev.tally.Limit.fixedWindow(3, java.time.Duration.ofHours(1)));
    var d = limiter.decide(2);
    assertThat(d.limitIndex()).isEqualTo(1);
    assertThat(d.limits()).containsExactly(new dev.tally.Decision.LimitState(0, 5, 5, 0),
        new dev.tally.Decision.LimitState(1, 3, 3, 0));
  }

  @Test
  public void transactionsAnswerAsEachOperationWould() {
    TransactionResult r = counters.transaction(tx -> tx.incr("a", 2, 3).get("a").delete("a").put("b", 4, null));
    assertThat(r.getLong(0)).isEqualTo(5);
    assertThat(r.isPresent(1)).isFalse();
    assertThat(r.getLong(2)).isEqualTo(0);
    assertThat(r.getLong(3)).isEqualTo(4);
  }
}
