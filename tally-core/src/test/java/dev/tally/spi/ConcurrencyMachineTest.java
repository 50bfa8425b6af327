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

  private static final long QUEUE = SECOND / 2;

  private static ConcurrencyCall waiter(long max, long nonce, long weight) {
    return ConcurrencyCall.acquireQueued("k", max, nonce, weight, 10 * SECOND, QUEUE);
  }

  /** A record holding {@code weights} leases, granted at T0 with nonces 100, 101, ... */
  private static ConcurrencyRecord holding(long max, long... weights) {
    ConcurrencyRecord r = null;
    for (int i = 0; i < weights.length; i++) {
      ConcurrencyMachine.Outcome o = step(r, T0, ConcurrencyCall.acquire("k", max, 100 + i, weights[i], 10 * SECOND));
      assertThat(o.result().ok()).isTrue();
      r = o.next();
    }
    return r;
  }

  @Test
  void aRefusedWaiterQueuesAndIsServedBeforeALaterOneAndBeforeATryAcquire() {
    ConcurrencyRecord r = holding(1, 1);
    ConcurrencyMachine.Outcome a = step(r, T0, waiter(1, 1, 1));
    ConcurrencyMachine.Outcome b = step(a.next(), T0, waiter(1, 2, 1));
    assertThat(b.result().ok()).isFalse();
    assertThat(b.next().waiting()).isEqualTo(2);
    r = step(b.next(), T0, ConcurrencyCall.release("k", 1, 1, 100)).next();
    // the permit is free, but held for the head ticket: neither the second waiter nor a caller without a ticket takes it
    assertThat(step(r, T0, waiter(1, 2, 1)).result().ok()).isFalse();
    assertThat(step(r, T0, ConcurrencyCall.acquire("k", 1, 3, 1, SECOND)).result().ok()).isFalse();
    ConcurrencyMachine.Outcome head = step(r, T0, waiter(1, 1, 1));
    assertThat(head.result().ok()).isTrue();
    assertThat(head.next().waiting()).as("the granted waiter's ticket is gone").isEqualTo(1);
    r = step(head.next(), T0, ConcurrencyCall.release("k", 1, head.result().token(), 1)).next();
    assertThat(step(r, T0, waiter(1, 2, 1)).result().ok()).isTrue();
  }

  @Test
  void aTryAcquireQueuesNoTicket() {
    ConcurrencyMachine.Outcome o = step(holding(1, 1), T0, ConcurrencyCall.acquire("k", 1, 5, 1, SECOND));
    assertThat(o.result().ok()).isFalse();
    assertThat(o.changed()).isFalse();
    assertThat(o.next().waiting()).isZero();
  }

  @Test
  void aLookRefreshesTheTicketInPlaceAndADeadWaitersTicketLapses() {
    ConcurrencyRecord r = holding(1, 1);
    r = step(r, T0, waiter(1, 1, 1)).next(); // the waiter that will die
    r = step(r, T0 + QUEUE / 4, waiter(1, 2, 1)).next();
    r = step(r, T0 + QUEUE / 4, ConcurrencyCall.release("k", 1, 1, 100)).next();
    assertThat(step(r, T0 + QUEUE / 2, waiter(1, 2, 1)).changed())
        .as("a look early in its ticket's life writes nothing").isFalse();
    // the second waiter's looks refresh its ticket once past half its life; the first never looks again
    ConcurrencyMachine.Outcome look = step(r, T0 + QUEUE - 1, waiter(1, 2, 1));
    assertThat(look.result().ok()).as("the dead waiter's ticket is live still").isFalse();
    assertThat(look.next().tickets()[1 * ConcurrencyRecord.TICKET_WORDS + 2]).isEqualTo(T0 + QUEUE - 1 + QUEUE);
    ConcurrencyMachine.Outcome after = step(look.next(), T0 + QUEUE, waiter(1, 2, 1));
    assertThat(after.result().ok()).as("granted once the dead waiter's ticket lapsed, %d after its look", QUEUE)
        .isTrue();
    assertThat(after.next().waiting()).isZero();
  }

  @Test
  void aTicketThatLapsedIsTakenAgainAtTheBack() {
    ConcurrencyRecord r = holding(1, 1);
    r = step(r, T0, waiter(1, 1, 1)).next();
    r = step(r, T0 + QUEUE / 2, waiter(1, 2, 1)).next();
    r = step(r, T0 + QUEUE, waiter(1, 1, 1)).next(); // looked too late: its ticket had lapsed
    assertThat(r.tickets()[0]).isEqualTo(2);
    assertThat(r.tickets()[ConcurrencyRecord.TICKET_WORDS]).isEqualTo(1);
  }

  @Test
  void aWithdrawnTicketHoldsNobodyUp() {
    ConcurrencyRecord r = holding(1, 1);
    r = step(r, T0, waiter(1, 1, 1)).next();
    r = step(r, T0, ConcurrencyCall.release("k", 1, 1, 100)).next();
    ConcurrencyMachine.Outcome w = step(r, T0, ConcurrencyCall.withdraw("k", 1, 1));
    assertThat(w.result().ok()).isTrue();
    assertThat(step(w.next(), T0, ConcurrencyCall.withdraw("k", 1, 1)).result().ok()).as("twice").isFalse();
    assertThat(step(w.next(), T0, ConcurrencyCall.acquire("k", 1, 3, 1, SECOND)).result().ok()).isTrue();
  }

  @Test
  void aHeavyHeadIsNotStarvedByLightOnesBehindIt() {
    ConcurrencyRecord r = holding(4, 1, 1, 1); // 1 free
    r = step(r, T0, waiter(4, 1, 3)).next(); // needs 3
    assertThat(step(r, T0, waiter(4, 2, 1)).result().ok()).as("the free permit is the head's").isFalse();
    assertThat(step(r, T0, ConcurrencyCall.acquire("k", 4, 9, 1, SECOND)).result().ok()).isFalse();
    r = step(r, T0, waiter(4, 2, 1)).next();
    r = step(r, T0, ConcurrencyCall.release("k", 4, 1, 100)).next();
    r = step(r, T0, ConcurrencyCall.release("k", 4, 2, 101)).next(); // 3 free: the head's
    assertThat(step(r, T0, waiter(4, 2, 1)).result().ok()).isFalse();
    ConcurrencyMachine.Outcome head = step(r, T0, waiter(4, 1, 3));
    assertThat(head.result().ok()).isTrue();
    assertThat(head.result().inUse()).isEqualTo(4);
  }

  @Test
  void aLightWaiterBehindIsGrantedWhenTheRoomLeftCoversEveryoneAhead() {
    ConcurrencyRecord r = holding(6, 1, 1, 1, 1); // 2 free
    r = step(r, T0, waiter(6, 1, 3)).next(); // the head needs 3: refused
    r = step(r, T0, waiter(6, 2, 1)).next(); // 1 + 3 ahead > 2 free: refused
    r = step(r, T0, ConcurrencyCall.release("k", 6, 1, 100)).next();
    r = step(r, T0, ConcurrencyCall.release("k", 6, 2, 101)).next(); // 4 free: 3 for the head, 1 left
    assertThat(step(r, T0, ConcurrencyCall.acquire("k", 6, 9, 2, SECOND)).result().ok())
        .as("2 more than the room left after the head").isFalse();
    ConcurrencyMachine.Outcome second = step(r, T0, waiter(6, 2, 1));
    assertThat(second.result().ok()).as("the head still fits after it").isTrue();
    assertThat(step(second.next(), T0, waiter(6, 1, 3)).result().ok()).isTrue();
  }

  @Test
  void theQueueIsBoundedAndAWaiterBeyondItStaysUnqueued() {
    ConcurrencyRecord r = holding(1, 1);
    for (int i = 0; i < ConcurrencyMachine.MAX_TICKETS; i++) {
      r = step(r, T0, waiter(1, 1000 + i, 1)).next();
    }
    ConcurrencyMachine.Outcome beyond = step(r, T0, waiter(1, 7, 1));
    assertThat(beyond.result().ok()).isFalse();
    assertThat(beyond.changed()).isFalse();
    assertThat(beyond.next().waiting()).isEqualTo(ConcurrencyMachine.MAX_TICKETS);
    ConcurrencyMachine.Outcome small = ConcurrencyMachine.apply(holding(1, 1), T0, waiter(1, 7, 1),
        ConcurrencyRecord.HEADER_WORDS_2 + ConcurrencyRecord.LEASE_WORDS + ConcurrencyRecord.TICKET_WORDS - 1);
    assertThat(small.next().waiting()).as("a store whose record has no room for the ticket").isZero();
  }

  @Test
  void aWeightAboveTheLimitNeverQueues() {
    assertThat(step(holding(2, 1), T0, waiter(2, 1, 3)).next().waiting()).isZero();
  }

  @Test
  void aRecordWithTicketsRoundTripsInFormat2AndOneWithoutInFormat1() {
    ConcurrencyRecord queued = step(holding(3, 2, 1), T0, waiter(3, 1, 2)).next();
    long[] w = queued.toWords();
    assertThat(w[0]).isEqualTo(ConcurrencyRecord.TAG_2);
    assertThat(w).hasSize(queued.words());
    assertThat(ConcurrencyRecord.fromWords("k", w)).isEqualTo(queued);
    ConcurrencyRecord plain = holding(3, 2, 1);
    assertThat(plain.toWords()[0]).isEqualTo(ConcurrencyRecord.TAG);
    // a record written before tickets existed reads as one with none
    long[] old = {ConcurrencyRecord.TAG, T0, 2, 1, 100, 2, T0 + 10 * SECOND, 2, 101, 1, T0 + 10 * SECOND};
    assertThat(ConcurrencyRecord.fromWords("k", old)).isEqualTo(plain);
    assertThatThrownBy(() -> ConcurrencyRecord.fromWords("k", new long[] {ConcurrencyRecord.TAG_2, 0, 0, 2, 1, 2, 3}))
        .isInstanceOf(StoreException.class);
  }
}
