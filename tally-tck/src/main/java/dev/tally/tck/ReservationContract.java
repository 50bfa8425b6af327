package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Reservation;
import dev.tally.ReservationGoneException;
import dev.tally.StoreException;
import dev.tally.Tally;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Reservations ({@link RateLimiter#reserve}): an estimate taken ahead of work and settled at the
 * real cost, the surplus given back or the excess charged; cancelled; closed once; settled at the
 * estimate when its ttl ends. The limiters hold a day's (or a month's) allowance, so nothing
 * refills while a case runs and every total is exact. A hold's expiry follows the store's counter
 * expiry: the kit's clock, or real time where the configuration
 * {@linkplain StoreConfiguration#expiringOnServerClock expires on the server's clock}, which is
 * why the ttls that run out are a few hundred milliseconds.
 */
public abstract class ReservationContract extends TallyFixture {
  private static final long LIMIT = 1_000;
  private static final Duration LONG_TTL = Duration.ofMinutes(10);
  private static final Duration SHORT_TTL = Duration.ofMillis(300);
  private static final Duration PAST_SHORT_TTL = Duration.ofMillis(450);

  private String name;

  @BeforeEach
  void nameTheLimiter() {
    name = group(uniqueGroup()) + ":tokens";
  }

  private RateLimiter limiter(long limit) {
    return tally.limiter(name, Limit.fixedWindow(limit, Duration.ofDays(1)));
  }

  /** Every algorithm of the limiter kit, each with 20 units and nothing added while the case runs. */
  public static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> algorithms() {
    return LimiterContract.algorithms();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void aSettlementCostsTheActualOnEveryAlgorithm(String algorithm, Limit limit) {
    RateLimiter l = tally.limiter(name, limit);
    Reservation below = l.reserve(8, LONG_TTL);
    assertThat(below.granted()).isTrue();
    assertThat(below.decision().remaining()).isEqualTo(12);
    assertThat(below.settle(5).remaining()).as("the surplus of 3 given back").isEqualTo(15);
    Reservation above = l.reserve(8, LONG_TTL);
    assertThat(above.settle(11).remaining()).as("the excess of 3 taken").isEqualTo(4);
    assertThat(l.decide(5).allowed()).as("later decisions see the excess").isFalse();
    assertThat(l.decide(4).allowed()).isTrue();
  }

  @Test
  public void settlingBelowTheEstimateRefundsTheSurplus() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    assertThat(r.granted()).isTrue();
    assertThat(r.estimate()).isEqualTo(300);
    assertThat(l.available()).as("the estimate is taken at once").isEqualTo(700);
    Decision settled = r.settle(120);
    assertThat(settled.allowed()).isTrue();
    assertThat(settled.remaining()).isEqualTo(880);
    assertThat(l.available()).isEqualTo(880);
  }

  @Test
  public void settlingAboveTheEstimateChargesTheExcess() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    assertThat(r.settle(450).remaining()).isEqualTo(550);
    assertThat(l.decide(551).allowed()).as("the excess is seen by later decisions").isFalse();
    assertThat(l.decide(550).allowed()).isTrue();
  }

  @Test
  public void settlingAtTheEstimateChangesNothingButClosesIt() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    assertThat(r.settle(300).remaining()).isEqualTo(700);
    assertThatThrownBy(() -> l.reservation(r.id()).cancel()).isInstanceOf(ReservationGoneException.class);
    assertThat(l.available()).isEqualTo(700);
  }

  @Test
  public void cancellingGivesEverythingBack() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    assertThat(r.cancel().remaining()).isEqualTo(LIMIT);
    assertThat(l.available()).isEqualTo(LIMIT);
  }

  @Test
  public void aRefusedReservationHoldsNothing() {
    RateLimiter l = limiter(LIMIT);
    l.decide(900);
    Reservation r = l.reserve(200, LONG_TTL);
    assertThat(r.granted()).isFalse();
    assertThat(r.decision().remaining()).isEqualTo(100);
    assertThat(l.available()).as("nothing taken").isEqualTo(100);
    assertThatThrownBy(() -> r.settle(50)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("refused");
    assertThatThrownBy(() -> l.reservation(r.id()).settle(50))
        .as("by its id: there is no hold").isInstanceOf(ReservationGoneException.class);
    assertThat(l.available()).isEqualTo(100);
  }

  @Test
  public void aSecondSettlementOrACancellationAfterOneIsRefusedAndChangesNothing() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    r.settle(200);
    assertThat(l.available()).isEqualTo(800);
    assertThatThrownBy(() -> r.settle(100)).isInstanceOf(ReservationGoneException.class)
        .hasMessageContaining(r.id()).hasMessageContaining("already settled");
    assertThatThrownBy(r::cancel).isInstanceOf(ReservationGoneException.class);
    assertThatThrownBy(() -> l.reservation(r.id()).cancel()).as("by its id")
        .isInstanceOf(ReservationGoneException.class).hasMessageContaining(r.id());
    assertThatThrownBy(() -> l.reservation(r.id()).settle(900)).isInstanceOf(ReservationGoneException.class);
    assertThat(l.available()).as("nothing changed").isEqualTo(800);

    Reservation c = l.reserve(100, LONG_TTL);
    c.cancel();
    assertThatThrownBy(() -> l.reservation(c.id()).settle(100)).isInstanceOf(ReservationGoneException.class);
    assertThat(l.available()).isEqualTo(800);
  }

  @Test
  public void aRetriedSettlementAppliesOnceAndAnswersTheSame() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    Decision first = l.reservation(r.id()).settle(420);
    l.decide(10); // another caller moves the limiter on
    Decision retry = l.reservation(r.id()).settle(420); // as after a lost reply
    assertThat(retry.remaining()).as("the first settlement's answer").isEqualTo(first.remaining()).isEqualTo(580);
    assertThat(l.available()).as("the excess taken once").isEqualTo(570);
  }

  @Test
  public void aRetriedReserveWithAnOperationIdTakesOnce() {
    RateLimiter l = limiter(LIMIT);
    String id = "req-" + UUID.randomUUID();
    Reservation first = l.withOperationId(id).reserve(300, LONG_TTL);
    Reservation retry = l.withOperationId(id).reserve(300, LONG_TTL);
    assertThat(first.id()).isEqualTo(id).isEqualTo(retry.id());
    assertThat(retry.decision().remaining()).isEqualTo(700);
    assertThat(l.available()).isEqualTo(700);
    retry.settle(100);
    assertThat(l.available()).isEqualTo(900);
  }

  @Test
  public void aReservationNotSettledWithinItsTtlIsSettledAtItsEstimate() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, SHORT_TTL);
    advance(PAST_SHORT_TTL);
    assertThatThrownBy(() -> r.settle(10)).isInstanceOf(ReservationGoneException.class)
        .hasMessageContaining("expired");
    assertThatThrownBy(r::cancel).isInstanceOf(ReservationGoneException.class);
    assertThat(l.available()).as("the estimate stays taken").isEqualTo(700);
  }

  @Test
  public void aReservationIsSettledByIdFromAnotherInstance() {
    RateLimiter l = limiter(LIMIT);
    Reservation r = l.reserve(300, LONG_TTL);
    try (Tally other = open(clock)) {
      // A store of its own per instance (mem:, a fresh directory per file: instance) shares
      // nothing with another: the id is settled through a new handle of this instance instead,
      // which is all the other instance would have (the id, nothing in memory). MultiProcessTest
      // settles by id across processes on file:.
      RateLimiter there = other.limiter(name, Limit.fixedWindow(LIMIT, Duration.ofDays(1)));
      boolean shared = there.available() == LIMIT - 300;
      if (!shared) {
        there = tally.limiter(name, Limit.fixedWindow(LIMIT, Duration.ofDays(1)));
      }
      assertThat(there.reservation(r.id()).settle(50).remaining()).isEqualTo(950);
    }
    assertThat(l.available()).isEqualTo(950);
    assertThatThrownBy(() -> r.settle(60)).isInstanceOf(ReservationGoneException.class);
    assertThat(r.settle(50).remaining()).as("the same settlement again is a retry: the first answer")
        .isEqualTo(950);
    assertThat(l.available()).isEqualTo(950);
  }

  @Test
  public void argumentsAreChecked() {
    RateLimiter l = limiter(LIMIT);
    assertThatThrownBy(() -> l.reserve(0, LONG_TTL)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1 or more");
    assertThatThrownBy(() -> l.reserve(10, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("positive");
    assertThatThrownBy(() -> l.reserve(10, Duration.ofHours(2))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retention");
    Reservation r = l.reserve(10, LONG_TTL);
    assertThatThrownBy(() -> r.settle(-1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("zero or more");
    assertThatThrownBy(() -> l.reservation("a b")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> l.reservation("")).isInstanceOf(IllegalArgumentException.class);
    assertThat(l.available()).isEqualTo(LIMIT - 10);
  }

  /**
   * {@code call}, retried after a store timeout, as a caller would: 32 threads on one key queue
   * for it, and on a store whose steps a loaded machine slows (DynamoDB's conditional writes) some
   * wait past the timeout. Every step of a reservation carries an operation id, so a retry applies
   * at most once, which the exact total then checks.
   */
  private static <T> T retried(java.util.function.Supplier<T> call) {
    for (int attempt = 1; ; attempt++) {
      try {
        return call.get();
      } catch (StoreException e) {
        if (attempt == 5) {
          throw e;
        }
      }
    }
  }

  /** Reservations per thread in the 32-thread case. */
  protected int roundsPerThread() {
    StoreConfiguration c = configuration();
    return c == null ? 40 : Math.max(5, c.operationsPerThread() / 100);
  }

  /**
   * The must-show: 32 threads reserve on one limiter and settle below and above their estimates,
   * at them, cancel, retry a settlement, try to settle twice, and abandon reservations; after the
   * abandoned ones' ttl, the limiter has taken exactly the settled actual costs plus the abandoned
   * estimates.
   */
  @Test
  public void thirtyTwoThreadsChargeExactlyTheSettledCostsPlusTheExpiredEstimates() {
    long limit = 100_000_000; // nothing refused, no debt, nothing refilled in a day's window
    RateLimiter l = limiter(limit);
    AtomicLong expected = new AtomicLong();
    ConcurrentLinkedQueue<String> abandoned = new ConcurrentLinkedQueue<>();
    Concurrently.run(32, roundsPerThread(), (t, i) -> {
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      long estimate = 1L + rnd.nextInt(1_000);
      int kind = (t + i) % 6;
      RateLimiter named = l.withOperationId("res-" + UUID.randomUUID()); // so a timed-out reserve may be retried
      Reservation r = retried(() -> named.reserve(estimate, kind == 5 ? SHORT_TTL : LONG_TTL));
      if (!r.granted()) {
        throw new AssertionError("refused with " + r.decision().remaining() + " left");
      }
      switch (kind) {
        case 0 -> { // below
          long actual = rnd.nextLong(estimate);
          retried(() -> r.settle(actual));
          expected.addAndGet(actual);
        }
        case 1 -> { // above, retried as after a lost reply
          long actual = estimate + 1 + rnd.nextInt(1_000);
          retried(() -> r.settle(actual));
          retried(() -> l.reservation(r.id()).settle(actual));
          expected.addAndGet(actual);
        }
        case 2 -> { // at the estimate
          retried(() -> r.settle(estimate));
          expected.addAndGet(estimate);
        }
        case 3 -> { // cancelled, then a settlement refused
          retried(r::cancel);
          try {
            retried(() -> l.reservation(r.id()).settle(estimate + 7));
            throw new AssertionError("a cancelled reservation was settled");
          } catch (ReservationGoneException expectedRefusal) {
            // closed once
          }
        }
        case 4 -> { // settled by its id, then a second, different settlement refused
          long actual = rnd.nextLong(2 * estimate);
          retried(() -> l.reservation(r.id()).settle(actual));
          expected.addAndGet(actual);
          try {
            retried(() -> r.settle(actual + 1));
            throw new AssertionError("a settled reservation was settled again");
          } catch (ReservationGoneException expectedRefusal) {
            // closed once
          }
        }
        default -> { // abandoned: settled at its estimate when its ttl ends
          abandoned.add(r.id());
          expected.addAndGet(estimate);
        }
      }
    });
    advance(PAST_SHORT_TTL);
    for (String id : abandoned) {
      assertThatThrownBy(() -> l.reservation(id).settle(0)).as("abandoned %s", id)
          .isInstanceOf(ReservationGoneException.class);
    }
    assertThat(abandoned).isNotEmpty();
    assertThat(limit - l.available()).as("taken: settled costs plus abandoned estimates").isEqualTo(expected.get());
  }
}
