package dev.tally.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.StoreException;
import org.junit.jupiter.api.Test;

/** The rules of {@link ConcurrencyMachine} that the kit cannot reach through the API. */
class ConcurrencyMachineTest {
  private static final long T0 = 1_800_000_000_000_000_000L;
  private static final long SECOND = 1_000_000_000L;

  private static ConcurrencyMachine.Outcome step(ConcurrencyRecord r, long now, ConcurrencyCall call) {
    return ConcurrencyMachine.apply(r, now, call);
  }

  @Test
  void aRetriedAcquireFindsItsLeaseByNonceAndTakesNoSecondPermit() {
    ConcurrencyMachine.Outcome first = step(null, T0, ConcurrencyCall.acquire("k", 2, 42, 1, 10 * SECOND));
    ConcurrencyMachine.Outcome again = step(first.next(), T0 + SECOND, ConcurrencyCall.acquire("k", 2, 42, 1, 10 * SECOND));
    assertThat(again.result().ok()).isTrue();
    assertThat(again.result().token()).isEqualTo(first.result().token());
    assertThat(again.result().expiresAt()).isEqualTo(first.result().expiresAt());
    assertThat(again.result().inUse()).isEqualTo(1);
    assertThat(again.changed()).isFalse();
  }

  @Test
  void aLaggingClockDecidesAtTheLatestInstantAndRevivesNoLease() {
    ConcurrencyMachine.Outcome granted = step(null, T0, ConcurrencyCall.acquire("k", 1, 1, 1, 5 * SECOND));
    // another caller saw it expire at T0 + 5 s and took the permit
    ConcurrencyMachine.Outcome later = step(granted.next(), T0 + 6 * SECOND, ConcurrencyCall.acquire("k", 1, 2, 1, 5 * SECOND));
    assertThat(later.result().ok()).isTrue();
    // a caller whose clock says T0 + 1 s cannot renew the first lease, nor see it live
    ConcurrencyMachine.Outcome lagging = step(later.next(), T0 + SECOND,
        ConcurrencyCall.renew("k", 1, granted.result().token(), 1, 5 * SECOND));
    assertThat(lagging.result().ok()).isFalse();
    assertThat(lagging.result().now()).isEqualTo(T0 + 6 * SECOND);
    assertThat(lagging.result().inUse()).isEqualTo(1);
  }

  @Test
  void aLeaseIsMatchedByTokenAndNonceTogether() {
    ConcurrencyMachine.Outcome granted = step(null, T0, ConcurrencyCall.acquire("k", 1, 7, 1, 5 * SECOND));
    long token = granted.result().token();
    assertThat(step(granted.next(), T0, ConcurrencyCall.release("k", 1, token, 8)).result().ok()).isFalse();
    assertThat(step(granted.next(), T0, ConcurrencyCall.release("k", 1, token + 1, 7)).result().ok()).isFalse();
    assertThat(step(granted.next(), T0, ConcurrencyCall.release("k", 1, token, 7)).result().ok()).isTrue();
  }

  @Test
  void aPeekChangesNothingAndReportsTheEarliestExpiry() {
    ConcurrencyMachine.Outcome a = step(null, T0, ConcurrencyCall.acquire("k", 3, 1, 1, 9 * SECOND));
    ConcurrencyMachine.Outcome b = step(a.next(), T0, ConcurrencyCall.acquire("k", 3, 2, 2, 4 * SECOND));
    ConcurrencyMachine.Outcome peek = step(b.next(), T0 + SECOND, ConcurrencyCall.peek("k", 3));
    assertThat(peek.changed()).isFalse();
    assertThat(peek.result().inUse()).isEqualTo(3);
    assertThat(peek.result().fencing()).isEqualTo(2);
    assertThat(peek.result().earliestExpiry()).isEqualTo(T0 + 4 * SECOND);
  }

  @Test
  void theRecordRoundTripsThroughItsWordsAndRefusesOthers() {
    ConcurrencyRecord r = step(null, T0, ConcurrencyCall.acquire("k", 3, 1, 2, SECOND)).next();
    assertThat(ConcurrencyRecord.fromWords("k", r.toWords())).isEqualTo(r);
    assertThatThrownBy(() -> ConcurrencyRecord.fromWords("k", new long[] {1, 0, 0, 0, 0, 0}))
        .isInstanceOf(StoreException.class).hasMessageContaining("not a concurrency limit");
  }
}
