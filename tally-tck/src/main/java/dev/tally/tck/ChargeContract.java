package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A charge ({@link LimiterOperation#CHARGE}, the settlement of a reservation that cost more than
 * its estimate), for every store: granted beyond what is left, later requests refused until the
 * debt is repaid, the debt stopped one full limit below empty, charges from many threads summed
 * exactly, and a retried charge with an operation id applied once ({@code docs/limiters.md#debt}).
 *
 * <p>Charges go to the store's SPI, as a reservation settles them, on keys of the test's own, and
 * through {@link RateLimiter#charge} and its asynchronous form, as an application charges.
 */
public abstract class ChargeContract extends TallyFixture {
  private static final long SECOND = 1_000_000_000L;

  private Store store() {
    return Internals.storeOf(tally);
  }

  private static LimiterCall limiter(Limit limit) {
    return Internals.referenceLimiter("tck-charge-" + UUID.randomUUID(), List.of(limit));
  }

  private Decision charge(LimiterCall l, long permits) {
    Decision d = store().limit(l, LimiterOperation.CHARGE, permits);
    assertThat(d.allowed()).as("a charge is always granted").isTrue();
    return d;
  }

  private Decision acquire(LimiterCall l, long permits) {
    return store().limit(l, LimiterOperation.ACQUIRE, permits);
  }

  /** Whether the store decides at the kit's clock, so that waits can be checked to the nanosecond. */
  private boolean kitClock() {
    StoreConfiguration c = configuration();
    return c == null || c.decidesAtTheKitsClock();
  }

  /**
   * A bucket of 10 a second charged 25 is 10 below empty (the rest dropped): one unit waits for
   * the debt and itself, 1.1 s, to the nanosecond where the store runs on the kit's clock.
   */
  @Test
  public void aChargeBeyondCapacityIsGrantedAndDelaysLaterRequestsUntilRepaid() {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    LimiterCall l = limiter(Limit.tokenBucket(10, Duration.ofSeconds(1)));

    Decision charged = charge(l, 25);
    assertThat(charged.remaining()).isZero();
    Decision refused = acquire(l, 1);

    assertThat(refused.allowed()).isFalse();
    if (!kitClock()) {
      // on a server's clock some time passes between the calls: half a second is ample slack
      assertThat(refused.retryAfterNanos()).isBetween(SECOND / 2, 1_100_000_000L);
      return;
    }
    assertThat(charged.resetAfterNanos()).as("10 of the bucket and 10 of debt").isEqualTo(2 * SECOND);
    assertThat(refused.retryAfterNanos()).isEqualTo(1_100_000_000L);
    clock.advanceNanos(1_100_000_000L - 1);
    assertThat(acquire(l, 1).allowed()).as("a nanosecond early").isFalse();
    clock.advanceNanos(1);
    assertThat(acquire(l, 1).allowed()).isTrue();
  }

  /**
   * A window of 100 charged far beyond its bound counts 200: a refund of 101 then leaves one
   * unit, where an unbounded debt would leave none. The window's debt ends with it.
   */
  @Test
  public void theDebtStopsOneLimitBelowEmpty() {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    LimiterCall l = limiter(Limit.fixedWindow(100, Duration.ofDays(1)));

    charge(l, 60);
    charge(l, Long.MAX_VALUE);
    charge(l, 1);
    assertThat(acquire(l, 1).allowed()).isFalse();
    Decision back = store().limit(l, LimiterOperation.REFUND, 101);

    assertThat(back.remaining()).isEqualTo(1);
    if (kitClock()) {
      clock.advance(Duration.ofDays(1));
      assertThat(acquire(l, 100).allowed()).as("forgiven with the window").isTrue();
    }
  }

  /** 8 threads charging 4 units 25 times each: 800 in a window of 1,000, exactly. */
  @Test
  public void concurrentChargesSumExactlyWithinTheBound() {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    LimiterCall l = limiter(Limit.fixedWindow(1_000, Duration.ofDays(1)));

    Concurrently.run(8, 25, (thread, i) -> charge(l, 4));

    assertThat(store().limit(l, LimiterOperation.PEEK, 0).remaining()).isEqualTo(200);
  }

  /**
   * {@link RateLimiter#charge} and {@code async().charge}: granted beyond what is left, a request
   * refused in debt, a retried charge with an operation id applied once, and the window counting
   * up to twice its limit at most.
   */
  @Test
  public void aLimiterChargesBeyondWhatIsLeftUpToItsDebtBound() throws Exception {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    RateLimiter limiter = tally.limiter(group(uniqueGroup()) + ":charged", Limit.fixedWindow(100, Duration.ofDays(1)));
    assertThat(limiter.decide(70).allowed()).isTrue();

    Decision charged = limiter.charge(50);
    Decision async = limiter.async().charge(10).toCompletableFuture().get();
    RateLimiter once = limiter.withOperationId("tck-charge-" + UUID.randomUUID());
    once.charge(20);
    once.charge(20);

    assertThat(charged.allowed()).as("a charge is always granted").isTrue();
    assertThat(charged.remaining()).isZero();
    assertThat(async.allowed()).isTrue();
    assertThat(limiter.decide(1).allowed()).as("refused in debt").isFalse();
    limiter.refund(51);
    assertThat(limiter.available()).as("70 + 50 + 10 + 20 counted, less 51").isEqualTo(1);
    limiter.charge(500);
    limiter.refund(101);
    assertThat(limiter.available()).as("the window counted 200 at most").isEqualTo(1);
    assertThatThrownBy(() -> limiter.charge(-1)).isInstanceOf(IllegalArgumentException.class);
  }

  /** A settlement retried with its operation id charges once. */
  @Test
  public void aRetriedChargeWithAnOperationIdChargesOnce() {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    LimiterCall l = limiter(Limit.fixedWindow(100, Duration.ofDays(1)));
    OperationId id = OperationId.of("tck-charge-" + UUID.randomUUID());
    Mutation.LimiterStep step = new Mutation.LimiterStep(l, LimiterOperation.CHARGE, 30);

    Decision first = (Decision) store().applyOnce(id, step);
    Decision again = (Decision) store().applyOnce(id, step);

    assertThat(again).isEqualTo(first);
    assertThat(store().limit(l, LimiterOperation.PEEK, 0).remaining()).isEqualTo(70);
  }
}
