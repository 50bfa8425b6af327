package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.tally.BucketFullException;
import dev.tally.BucketState;
import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.LeakyBucket;
import dev.tally.Limit;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.WrongKindException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The rate limiter contract, for every store that keeps state. Time is the fixture's manual
 * clock, which every store must use when it is given one (stores with a clock of their own take
 * it through the SPI), so timelines are exact to the nanosecond.
 *
 * <p>The generic cases run once per algorithm, each configured with a capacity of
 * {@link #CAPACITY} and a refill slow enough that frozen time means "no refill".
 */
public abstract class LimiterContract extends TallyFixture {
  protected static final int CAPACITY = 20;
  private static final ZoneId UTC = ZoneOffset.UTC;

  /** Every algorithm with {@link #CAPACITY} units available now and none added for an hour. */
  public static Stream<Arguments> algorithms() {
    return Stream.of(
        Arguments.of("token bucket", Limit.tokenBucket(CAPACITY, Duration.ofHours(2))),
        Arguments.of("leaky bucket", Limit.leakyBucket(CAPACITY, Duration.ofHours(2))),
        Arguments.of("GCRA", Limit.gcra(CAPACITY - 1, CAPACITY, Duration.ofHours(2))),
        Arguments.of("fixed window", Limit.fixedWindow(CAPACITY, Duration.ofHours(2))),
        Arguments.of("sliding window", Limit.slidingWindow(CAPACITY, Duration.ofHours(2))),
        Arguments.of("quota", Limit.quota(CAPACITY, Limit.Period.MONTH, UTC)));
  }

  /** A limiter name unique to the test. */
  protected String name() {
    return "tck-limiter-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static final long NANO = 1;

  // ------------------------------------------------------------------ every algorithm

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void grantsExactlyTheCapacityThenDenies(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    for (int i = 1; i <= CAPACITY; i++) {
      Decision d = l.decide(1);
      assertThat(d.allowed()).as("request %d", i).isTrue();
      assertThat(d.remaining()).isEqualTo(CAPACITY - i);
      assertThat(d.limit()).isEqualTo(CAPACITY);
      assertThat(d.retryAfterNanos()).isZero();
    }
    Decision denied = l.decide(1);
    assertThat(denied.allowed()).isFalse();
    assertThat(denied.remaining()).isZero();
    assertThat(denied.retryAfterNanos()).isPositive();
    assertThat(l.tryAcquire()).isFalse();
  }

  /**
   * A clock that steps back (an NTP step, or a caller whose clock reading was delayed) must not
   * move the stored state back with it: just past a boundary, an earlier instant lies in the
   * previous window or period, whose count is not this one's. Deciding there would forget what
   * this window granted.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void aClockSteppingBackNeverGrantsAnAllowanceAgain(String kind, Limit limit) {
    clock.set(Instant.parse("2026-12-01T00:00:00.001Z")); // just past a window, a month, an hour
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.tryAcquire(CAPACITY)).isTrue();
    clock.advance(Duration.ofMillis(-2));
    assertThat(l.decide(1).allowed()).as("1 ms before the boundary").isFalse();
    clock.advance(Duration.ofMillis(2));
    assertThat(l.decide(1).allowed()).as("back where it was").isFalse();
    assertThat(l.available()).isZero();
  }

  /**
   * A call whose instant is earlier than one the store already decided this key at (another
   * host's clock, a thread descheduled after reading its own) is decided at that later instant,
   * for every algorithm: it gets what a call right after the first would get, never a refusal
   * the later instant would not give, and never a second grant of what was granted.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void aCallAtAnEarlierInstantIsDecidedAtTheLatestOne(String kind, Limit limit) {
    clock.set(Instant.parse("2026-12-01T12:00:00Z"));
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.decide(CAPACITY - 1).remaining()).isEqualTo(1);
    clock.advanceNanos(-1);
    Decision stale = l.decide(1);
    assertThat(stale.allowed()).as("decided at the later instant, where one unit is left").isTrue();
    assertThat(stale.remaining()).isZero();
    clock.advanceNanos(-1);
    assertThat(l.decide(1).allowed()).as("nothing is granted twice").isFalse();
  }

  /** The smallest case: a bucket of 2 draining in a minute, asked at t and t - 1 ns. */
  @Test
  public void aBucketOfTwoGrantsItsSecondUnitOneNanosecondEarlier() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(2, Duration.ofMinutes(1)));
    assertThat(l.tryAcquire(1)).isTrue();
    clock.advanceNanos(-1);
    Decision second = l.decide(1);
    assertThat(second.allowed()).isTrue();
    assertThat(second.remaining()).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void concurrentRequestsGrantExactlyTheCapacity(String kind, Limit limit) {
    String name = name();
    AtomicInteger granted = new AtomicInteger();
    int threads = 8;
    int perThread = CAPACITY; // 8 x capacity requests against a capacity of CAPACITY
    Concurrently.run(threads, perThread, (t, i) -> {
      RateLimiter own = tally.limiter(name, limit); // independent handles, one name
      if (own.tryAcquire(1)) {
        granted.incrementAndGet();
      }
    });
    assertThat(granted).hasValue(CAPACITY);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void twoHandlesOnOneNameShareState(String kind, Limit limit) {
    String name = name();
    RateLimiter a = tally.limiter(name, limit);
    RateLimiter b = tally.limiter(name, limit);
    assertThat(a.tryAcquire(CAPACITY - 1)).isTrue();
    assertThat(b.available()).isEqualTo(1);
    assertThat(b.tryAcquire(2)).isFalse();
    assertThat(b.tryAcquire(1)).isTrue();
    assertThat(a.tryAcquire(1)).isFalse();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void retryAfterIsExactToTheNanosecond(String kind, Limit limit) {
    assumeKitClock("decisions to the nanosecond");
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.tryAcquire(CAPACITY)).isTrue();
    Decision denied = l.decide(1);
    assertThat(denied.allowed()).isFalse();
    long wait = denied.retryAfterNanos();
    assertThat(wait).isPositive().isNotEqualTo(Decision.NEVER);
    clock.advanceNanos(wait - NANO);
    Decision early = l.decide(1);
    assertThat(early.allowed()).as("a nanosecond early").isFalse();
    assertThat(early.retryAfterNanos()).isEqualTo(NANO);
    clock.advanceNanos(NANO);
    assertThat(l.decide(1).allowed()).as("at retry-after").isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void weightedRequestsTakeAllOrNothing(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.tryAcquire(CAPACITY - 3)).isTrue();
    Decision d = l.decide(5);
    assertThat(d.allowed()).isFalse();
    assertThat(d.remaining()).isEqualTo(3);
    assertThat(l.available()).isEqualTo(3);
    assertThat(l.decide(3).allowed()).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void moreThanTheLimitIsNeverAllowed(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    Decision d = l.decide(CAPACITY + 1);
    assertThat(d.allowed()).isFalse();
    assertThat(d.retryAfterNanos()).isEqualTo(Decision.NEVER);
    assertThat(l.available()).isEqualTo(CAPACITY);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void zeroPermitsAreAlwaysAllowedAndChangeNothing(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.tryAcquire(CAPACITY)).isTrue();
    Decision d = l.decide(0);
    assertThat(d.allowed()).isTrue();
    assertThat(d.remaining()).isZero();
    assertThat(l.decide(1).allowed()).isFalse();
    assertThatThrownBy(() -> l.decide(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> l.tryAcquire(-1)).isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void peekAnswersForOneUnitAndTakesNothing(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    Decision fresh = l.peek();
    assertThat(fresh.allowed()).isTrue();
    assertThat(fresh.remaining()).isEqualTo(CAPACITY);
    assertThat(l.available()).isEqualTo(CAPACITY);
    assertThat(l.tryAcquire(CAPACITY)).isTrue();
    Decision empty = l.peek();
    assertThat(empty.allowed()).isFalse();
    assertThat(empty.remaining()).isZero();
    assertThat(empty.retryAfterNanos()).isPositive().isEqualTo(l.decide(1).retryAfterNanos());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void availableDoesNotConsume(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.available()).isEqualTo(CAPACITY);
    assertThat(l.available()).isEqualTo(CAPACITY);
    l.tryAcquire(4);
    assertThat(l.available()).isEqualTo(CAPACITY - 4);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void refundGivesBackButNeverBeyondTheLimit(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    l.tryAcquire(CAPACITY);
    l.refund(5);
    assertThat(l.available()).isEqualTo(5);
    l.refund(CAPACITY * 10L);
    assertThat(l.available()).isEqualTo(CAPACITY);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void resetMakesTheLimiterFull(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    l.tryAcquire(CAPACITY);
    l.reset();
    assertThat(l.available()).isEqualTo(CAPACITY);
    assertThat(l.tryAcquire(CAPACITY)).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void theLimiterIsFullAgainAfterResetAfter(String kind, Limit limit) {
    RateLimiter l = tally.limiter(name(), limit);
    Decision d = l.decide(CAPACITY);
    assertThat(d.resetAfterNanos()).isPositive();
    clock.advanceNanos(d.resetAfterNanos());
    assertThat(l.available()).isEqualTo(CAPACITY);
    Decision fresh = l.decide(0);
    assertThat(fresh.resetAfterNanos()).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void storedConfigurationWinsOverAHandles(String kind, Limit limit) {
    String name = name();
    RateLimiter first = tally.limiter(name, limit);
    first.tryAcquire(1);
    RateLimiter other = tally.limiter(name, Limit.fixedWindow(3, Duration.ofSeconds(1)));
    Decision d = other.decide(1);
    assertThat(d.limit()).isEqualTo(CAPACITY);
    assertThat(d.remaining()).isEqualTo(CAPACITY - 2);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void reconfigureKeepsTheConsumedAmountAndNeverGoesNegative(String kind, Limit limit) {
    String name = name();
    RateLimiter l = tally.limiter(name, limit);
    l.tryAcquire(CAPACITY - 5); // 15 consumed
    Limit bigger = scaled(limit, 2);
    RateLimiter grown = l.reconfigure(bigger);
    assertThat(grown.available()).isEqualTo(2L * CAPACITY - (CAPACITY - 5));
    Decision viaOldHandle = l.decide(0);
    assertThat(viaOldHandle.limit()).as("every handle applies the stored configuration").isEqualTo(2L * CAPACITY);
    RateLimiter shrunk = grown.reconfigure(scaled(limit, 0.5));
    Decision d = shrunk.decide(1);
    assertThat(d.allowed()).isFalse();
    assertThat(d.remaining()).isZero();
    assertThat(d.limit()).isEqualTo(CAPACITY / 2);
  }

  // ------------------------------------------------------------------ versions of the limits

  /**
   * A rolling deploy: the process of the new configuration (version 2) moves an existing key to
   * its limits on its first call, keeping what was consumed under the old ones, and the process
   * of the old configuration (version 1) then applies the stored new limits.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void aNewerVersionReplacesTheStoredLimitsKeepingWhatWasConsumed(String kind, Limit limit) {
    String name = name();
    RateLimiter v1 = tally.limiter(name, limit).withVersion(1);
    assertThat(v1.tryAcquire(5)).isTrue();
    RateLimiter v2 = tally.limiter(name, scaled(limit, 2)).withVersion(2);
    assertThat(v2.version()).isEqualTo(2);

    Decision upgraded = v2.decide(1);
    assertThat(upgraded.limit()).as("the newer limits apply").isEqualTo(2L * CAPACITY);
    assertThat(upgraded.remaining()).as("consumption kept").isEqualTo(2L * CAPACITY - 6);
    assertThat(upgraded.mismatch()).isEqualTo(Decision.Mismatch.UPGRADED);
    assertThat(upgraded.storedVersion()).isEqualTo(1);
    assertThat(v2.decide(0).mismatch()).as("moved once").isEqualTo(Decision.Mismatch.NONE);

    Decision adopted = v1.decide(1);
    assertThat(adopted.limit()).as("the older process applies the stored newer limits").isEqualTo(2L * CAPACITY);
    assertThat(adopted.remaining()).isEqualTo(2L * CAPACITY - 7);
    assertThat(adopted.mismatch()).isEqualTo(Decision.Mismatch.ADOPTED);
    assertThat(adopted.storedVersion()).isEqualTo(2);
    assertThat(v2.available()).as("still version 2's limits").isEqualTo(2L * CAPACITY - 7);
  }

  /** Two configurations that claim one version: the stored limits stay, for every process. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void theStoredLimitsWinOverOthersOfTheSameVersion(String kind, Limit limit) {
    String name = name();
    RateLimiter first = tally.limiter(name, limit).withVersion(3);
    assertThat(first.tryAcquire(2)).isTrue();
    Decision d = tally.limiter(name, scaled(limit, 2)).withVersion(3).decide(1);
    assertThat(d.limit()).isEqualTo(CAPACITY);
    assertThat(d.remaining()).isEqualTo(CAPACITY - 3);
    assertThat(d.mismatch()).isEqualTo(Decision.Mismatch.CONFLICT);
    assertThat(d.storedVersion()).isEqualTo(3);
    assertThat(first.decide(0).mismatch()).isEqualTo(Decision.Mismatch.NONE);
  }

  /**
   * A reconfiguration of a key with no state yet is stored: a handle with the old limits (no
   * version, or the same one) applies the new ones, even after calls that leave it full.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void reconfigureOnAKeyWithNoStateIsStored(String kind, Limit limit) {
    String name = name();
    RateLimiter old = tally.limiter(name, limit);
    old.reconfigure(scaled(limit, 2));
    assertThat(old.available()).as("the reconfigured limits, full").isEqualTo(2L * CAPACITY);
    assertThat(old.decide(0).limit()).isEqualTo(2L * CAPACITY);
    Decision d = old.decide(1);
    assertThat(d.limit()).isEqualTo(2L * CAPACITY);
    assertThat(d.remaining()).isEqualTo(2L * CAPACITY - 1);
    assertThat(d.mismatch()).isEqualTo(Decision.Mismatch.CONFLICT);
  }

  /** A newer version of the same limits takes the key silently: nothing differs but the number. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void aNewerVersionOfTheSameLimitsIsNoMismatch(String kind, Limit limit) {
    String name = name();
    assertThat(tally.limiter(name, limit).tryAcquire(4)).isTrue();
    RateLimiter v5 = tally.limiter(name, limit).withVersion(5);
    Decision d = v5.decide(1);
    assertThat(d.mismatch()).isEqualTo(Decision.Mismatch.NONE);
    assertThat(d.remaining()).isEqualTo(CAPACITY - 5);
    Decision older = tally.limiter(name, limit).withVersion(4).decide(1);
    assertThat(older.mismatch()).isEqualTo(Decision.Mismatch.NONE);
    assertThat(older.remaining()).isEqualTo(CAPACITY - 6);
    assertThat(tally.limiter(name, scaled(limit, 2)).withVersion(4).decide(0).storedVersion())
        .as("version 5 stored").isEqualTo(5);
  }

  @Test
  public void aVersionOutOfRangeIsRefused() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(1, Duration.ofSeconds(1)));
    assertThatThrownBy(() -> l.withVersion(-1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("version");
    assertThatThrownBy(() -> l.withVersion(1L << 45)).isInstanceOf(IllegalArgumentException.class);
    assertThat(l.withVersion((1L << 45) - 1).decide(1).allowed()).isTrue();
  }

  /** The same kind of limit with its capacity scaled. */
  private static Limit scaled(Limit limit, double factor) {
    long c = (long) (CAPACITY * factor);
    switch (limit.kind()) {
      case TOKEN_BUCKET: return Limit.tokenBucket(c, Duration.ofHours(2).multipliedBy(c).dividedBy(CAPACITY));
      case LEAKY_BUCKET: return Limit.leakyBucket(c, Duration.ofHours(2).multipliedBy(c).dividedBy(CAPACITY));
      case GCRA: return Limit.gcra(c - 1, c, Duration.ofHours(2).multipliedBy(c).dividedBy(CAPACITY));
      case FIXED_WINDOW: return Limit.fixedWindow(c, Duration.ofHours(2));
      case SLIDING_WINDOW: return Limit.slidingWindow(c, Duration.ofHours(2));
      case QUOTA: return Limit.quota(c, Limit.Period.MONTH, UTC);
      default: throw new AssertionError(limit);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("algorithms")
  public void acquireGivesUpAtOnceWhenTheWaitIsTooLong(String kind, Limit limit) throws Exception {
    RateLimiter l = tally.limiter(name(), limit);
    assertThat(l.acquire(CAPACITY, Duration.ofMillis(10))).isTrue();
    long start = System.nanoTime();
    assertThat(l.acquire(1, Duration.ofMillis(200))).isFalse();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(150));
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> l.acquire(1, Duration.ofSeconds(1))).isInstanceOf(InterruptedException.class);
  }

  // ------------------------------------------------------------------ several limits

  @Test
  public void severalLimitsAreCheckedTogetherAndNoneConsumesOnADenial() {
    RateLimiter l = tally.limiter(name(),
        Limit.tokenBucket(3, Duration.ofMinutes(1)),   // 3 per minute
        Limit.tokenBucket(2, Duration.ofSeconds(1)));  // and 2 per second
    assertThat(l.tryAcquire()).isTrue();
    assertThat(l.tryAcquire()).isTrue();
    Decision perSecond = l.decide(1);
    assertThat(perSecond.allowed()).isFalse();
    assertThat(perSecond.retryAfter()).isEqualTo(Duration.ofMillis(500));
    assertThat(perSecond.limit()).isEqualTo(2);
    clock.advance(Duration.ofSeconds(1));
    assertThat(l.tryAcquire()).as("the minute bucket still has its third token").isTrue();
    Decision perMinute = l.decide(1);
    assertThat(perMinute.allowed()).isFalse();
    assertThat(perMinute.limit()).isEqualTo(3);
    assertThat(perMinute.retryAfter()).isEqualTo(Duration.ofSeconds(19));
  }

  /**
   * A decision of several limits reports each one's own state ({@link Decision#limits()}): the
   * remaining and reset that limit alone would report, after the same steps. Limiters of one
   * limit each, fed what each limit of the composition saw (an acquisition where it granted, a
   * look where it denied), are the reference, on acquisitions, tries, refunds, denials by either
   * limit, a replayed operation id, the asynchronous view and a reset.
   */
  @Test
  public void aDecisionOfSeveralLimitsReportsEachLimitAsItAloneWould() {
    Limit[] limits = {
        Limit.tokenBucket(5, Duration.ofMinutes(1)),
        Limit.fixedWindow(100, Duration.ofHours(1)),
        Limit.slidingWindow(8, Duration.ofMinutes(10))};
    clock.set(Instant.parse("2026-12-01T10:20:00Z"));
    RateLimiter all = tally.limiter(name(), limits);
    RateLimiter[] alone = new RateLimiter[limits.length];
    for (int i = 0; i < limits.length; i++) {
      alone[i] = tally.limiter(name(), limits[i]);
    }
    assertEachAsAlone("an acquisition", all.decide(2), 2, alone);
    clock.advance(Duration.ofSeconds(7));
    assertEachAsAlone("a second one", all.decide(1), 1, alone);
    assertThat(all.tryAcquire(1)).isTrue();
    for (RateLimiter one : alone) {
      assertThat(one.tryAcquire(1)).isTrue();
    }
    assertEachAsAlone("a look after a try", all.decide(0), 0, alone);
    all.refund(1);
    for (RateLimiter one : alone) {
      one.refund(1);
    }
    assertEachAsAlone("a look after a refund", all.decide(0), 0, alone);
    Decision byBucket = all.decide(5);
    assertThat(byBucket.allowed()).as("the bucket has 2 of 5").isFalse();
    assertThat(byBucket.limitIndex()).isZero();
    assertEachAsAlone("a denial by the bucket", byBucket, 5, alone);

    clock.advance(Duration.ofMinutes(1)); // the bucket is full again; the sliding window has 5
    assertEachAsAlone("taking what the window has", all.decide(5), 5, alone);
    clock.advance(Duration.ofMinutes(1));
    Decision byWindow = all.decide(1);
    assertThat(byWindow.allowed()).as("the sliding window is empty").isFalse();
    assertThat(byWindow.limitIndex()).isEqualTo(2);
    assertEachAsAlone("a denial by the sliding window", byWindow, 1, alone);
    assertEachAsAlone("the same denial again", all.decide(1), 1, alone);

    clock.advance(Duration.ofMinutes(20));
    RateLimiter once = all.withOperationId("tck-" + UUID.randomUUID());
    Decision first = once.decide(3);
    assertEachAsAlone("a first call with an operation id", first, 3, alone);
    clock.advance(Duration.ofSeconds(30));
    Decision replayed = once.decide(3);
    assertThat(replayed).as("the replay").isEqualTo(first);
    assertThat(replayed.limits()).as("the replay's limits").isEqualTo(first.limits());
    assertEachAsAlone("an asynchronous acquisition",
        all.async().decide(1).toCompletableFuture().join(), 1, alone);

    all.reset();
    for (RateLimiter one : alone) {
      one.reset();
    }
    Decision full = all.decide(0);
    assertEachAsAlone("a look after a reset", full, 0, alone);
    assertThat(full.limits()).extracting(Decision.LimitState::remaining).containsExactly(5L, 100L, 8L);
    assertThat(full.limits()).extracting(Decision.LimitState::resetAfterNanos).containsOnly(0L);
  }

  /**
   * Checks {@code d}, a decision of all of {@code alone}'s limits together on {@code permits},
   * against each limiter of one limit, stepping each as its limit was: an acquisition of the
   * permits if {@code d} granted them, else a look. A one-limit decision's own list is one entry, its top-level fields.
   */
  private static void assertEachAsAlone(String step, Decision d, long permits, RateLimiter[] alone) {
    List<Decision.LimitState> each = d.limits();
    assertThat(each).as("%s: one state per limit, %s", step, d).hasSize(alone.length);
    long fewest = Long.MAX_VALUE;
    long latest = 0;
    for (int i = 0; i < alone.length; i++) {
      Decision own = alone[i].decide(d.allowed() ? permits : 0);
      assertThat(own.limits()).as("%s: a one-limit decision's own list", step)
          .containsExactly(new Decision.LimitState(0, own.remaining(), own.limit(), own.resetAfterNanos()));
      assertThat(each.get(i)).as("%s: limit %d of %s", step, i, d)
          .isEqualTo(new Decision.LimitState(i, own.remaining(), own.limit(), own.resetAfterNanos()));
      fewest = Math.min(fewest, own.remaining());
      latest = Math.max(latest, own.resetAfterNanos());
    }
    assertThat(d.remaining()).as("%s: the fewest left", step).isEqualTo(fewest);
    assertThat(each.get(d.limitIndex()).remaining()).as("%s: the deciding limit's", step).isEqualTo(fewest);
    assertThat(d.resetAfterNanos()).as("%s: the latest reset", step).isEqualTo(latest);
  }

  // ------------------------------------------------------------------ scripted timelines

  @Test
  public void tokenBucketRefillsSmoothly() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(10, Duration.ofSeconds(1)));
    Decision first = l.decide(1);
    assertThat(first.remaining()).isEqualTo(9);
    assertThat(first.resetAfter()).isEqualTo(Duration.ofMillis(100));
    assertThat(l.tryAcquire(9)).isTrue();
    Decision empty = l.decide(1);
    assertThat(empty.allowed()).isFalse();
    assertThat(empty.retryAfter()).isEqualTo(Duration.ofMillis(100));
    assertThat(empty.resetAfter()).isEqualTo(Duration.ofSeconds(1));
    clock.advance(Duration.ofMillis(350));
    assertThat(l.available()).isEqualTo(3);
    Decision five = l.decide(5);
    assertThat(five.allowed()).isFalse();
    assertThat(five.retryAfter()).isEqualTo(Duration.ofMillis(150));
    clock.advance(Duration.ofSeconds(10));
    assertThat(l.available()).as("never more than the capacity").isEqualTo(10);
  }

  @Test
  public void gcraAnswersAsRedisCell() {
    // CL.THROTTLE user123 15 30 60 1 -> 0 (allowed), 16 (limit), 15 (remaining), -1, 2 (reset s)
    RateLimiter l = tally.limiter(name(), Limit.gcra(15, 30, Duration.ofSeconds(60)));
    Decision d = l.decide(1);
    assertThat(d.allowed()).isTrue();
    assertThat(d.limit()).isEqualTo(16);
    assertThat(d.remaining()).isEqualTo(15);
    assertThat(d.retryAfterNanos()).isZero();
    assertThat(d.resetAfter()).isEqualTo(Duration.ofSeconds(2));
    assertThat(l.tryAcquire(15)).isTrue();
    Decision limited = l.decide(1);
    assertThat(limited.allowed()).isFalse();
    assertThat(limited.retryAfter()).isEqualTo(Duration.ofSeconds(2));
    assertThat(limited.resetAfter()).isEqualTo(Duration.ofSeconds(32));
  }

  @Test
  public void aDecisionNamesTheLimitThatDecidedEvenAmongLimitsOfOneSize() {
    RateLimiter l = tally.limiter(name(), Limit.tokenBucket(3, Duration.ofSeconds(1)),
        Limit.fixedWindow(3, Duration.ofHours(1)));
    assertThat(l.tryAcquire(3)).isTrue();
    Decision both = l.decide(1);
    assertThat(both.allowed()).isFalse();
    assertThat(both.limitIndex()).as("both empty: the first").isZero();
    clock.advance(Duration.ofSeconds(1)); // the bucket is full again, the window is not
    Decision window = l.decide(1);
    assertThat(window.allowed()).isFalse();
    assertThat(window.limit()).isEqualTo(3);
    assertThat(window.limitIndex()).as("the window decided").isEqualTo(1);
    assertThat(tally.limiter(name(), Limit.tokenBucket(3, Duration.ofSeconds(1))).decide(1).limitIndex()).isZero();
  }

  @Test
  public void fixedWindowResetsAtTheAlignedBoundary() {
    clock.set(Instant.parse("2026-11-08T10:00:00.250Z"));
    RateLimiter l = tally.limiter(name(), Limit.fixedWindow(3, Duration.ofSeconds(1)));
    assertThat(l.tryAcquire(3)).isTrue();
    Decision d = l.decide(1);
    assertThat(d.allowed()).isFalse();
    assertThat(d.retryAfter()).isEqualTo(Duration.ofMillis(750));
    assertThat(d.resetAfter()).isEqualTo(Duration.ofMillis(750));
    clock.advance(Duration.ofMillis(750));
    assertThat(l.decide(1).remaining()).isEqualTo(2);
  }

  @Test
  public void slidingWindowWeighsThePreviousWindow() {
    RateLimiter l = tally.limiter(name(), Limit.slidingWindow(10, Duration.ofSeconds(1)));
    assertThat(l.tryAcquire(10)).isTrue();
    Decision d = l.decide(1);
    assertThat(d.allowed()).isFalse();
    // Next window: the 10 weigh 10 * (1 - e); one more fits once that is at most 9: e = 0.1 s.
    assertThat(d.retryAfter()).isEqualTo(Duration.ofMillis(1100));
    clock.advance(Duration.ofMillis(1500)); // halfway through the next window: weight 5
    assertThat(l.available()).isEqualTo(5);
    assertThat(l.tryAcquire(5)).isTrue();
    assertThat(l.tryAcquire(1)).isFalse();
  }

  /**
   * A top-up on a name whose stored state has no quota (another handle made it a token bucket)
   * is refused and changes nothing: the limiter goes on answering.
   */
  @Test
  public void aRefusedTopUpLeavesTheLimiterAsItWas() {
    String name = name();
    RateLimiter bucket = tally.limiter(name, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThat(bucket.tryAcquire()).isTrue();
    Quota quota = tally.quota(name, 100, Limit.Period.MONTH, UTC);
    assertThatThrownBy(() -> quota.topUp(10)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no quota");
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
      assertThat(bucket.available()).isEqualTo(4);
      assertThat(bucket.tryAcquire()).isTrue();
    });
  }

  @Test
  public void quotaCountsDownAndRenewsOnTheFirstOfTheMonth() {
    clock.set(Instant.parse("2026-11-08T12:00:00Z"));
    Quota q = tally.quota(name(), 1000, Limit.Period.MONTH, ZoneId.of("Europe/Paris"));
    assertThat(List.of(q.tryAcquire(999), q.tryAcquire(1), q.tryAcquire(1))).containsExactly(true, true, false);
    Decision d = q.decide(1);
    assertThat(d.retryAfter()).isEqualTo(Duration.between(
        Instant.parse("2026-11-08T12:00:00Z"), Instant.parse("2026-11-30T23:00:00Z")));
    q.topUp(10);
    assertThat(q.available()).isEqualTo(10);
    assertThat(q.tryAcquire(10)).isTrue();
    q.refund(4);
    assertThat(q.available()).isEqualTo(4);
    clock.set(Instant.parse("2026-11-30T23:00:00Z"));
    assertThat(q.available()).isEqualTo(1000);
    assertThat(q.decide(2000).retryAfterNanos()).isEqualTo(Decision.NEVER);
  }

  @Test
  public void dailyQuotaFollowsDaylightSavingTime() {
    ZoneId paris = ZoneId.of("Europe/Paris");
    clock.set(Instant.parse("2026-10-25T10:00:00Z")); // the day clocks go back: 25 hours long
    Quota q = tally.quota(name(), 1, Limit.Period.DAY, paris);
    assertThat(q.tryAcquire()).isTrue();
    assertThat(q.decide(1).retryAfter()).isEqualTo(Duration.between(
        Instant.parse("2026-10-25T10:00:00Z"), Instant.parse("2026-10-25T23:00:00Z")));
  }

  // ------------------------------------------------------------------ the leaky bucket seed

  @Test
  public void leakyBucketHasTheSeedInterface() {
    assumeKitClock("reset instants computed on the client's clock");
    String name = name();
    LeakyBucket bucket = tally.leakyBucket(name, 100, Duration.ofMinutes(1));
    assertThat(bucket.capacity()).isEqualTo(100);
    BucketState s = bucket.add(1);
    assertThat(s.capacity()).isEqualTo(100);
    assertThat(s.remaining()).isEqualTo(99);
    assertThat(s.reset()).isEqualTo(Instant.parse("2026-11-08T00:00:00.600Z"));
    bucket.add(99);
    BucketFullException full = org.junit.jupiter.api.Assertions.assertThrows(
        BucketFullException.class, () -> bucket.add(1));
    assertThat(full.state().remaining()).isZero();
    assertThat(full.state().reset()).isEqualTo(Instant.parse("2026-11-08T00:01:00Z"));
    assertThat(bucket.add(0).remaining()).as("add(0) on a full bucket succeeds").isZero();
    clock.advance(Duration.ofMillis(600));
    assertThat(bucket.add(1).remaining()).isZero();
  }

  @Test
  public void leakyBucketAddOverCapacityIsAlwaysFull() {
    LeakyBucket bucket = tally.leakyBucket(name(), 10, Duration.ofSeconds(10));
    assertThatThrownBy(() -> bucket.add(11)).isInstanceOf(BucketFullException.class);
    assertThat(bucket.state().remaining()).isEqualTo(10);
  }

  @Test
  public void leakyBucketCreateFindsAndAdoptsTheStoredBucket() {
    String name = name();
    LeakyBucket first = tally.leakyBucket(name, 100, Duration.ofMinutes(1));
    first.add(40);
    LeakyBucket again = tally.leakyBucket(name, 5, Duration.ofHours(1));
    assertThat(again.capacity()).isEqualTo(100);
    assertThat(again.state().remaining()).isEqualTo(60);
    assertThat(again.add(60).remaining()).isZero();
  }

  @Test
  public void leakyBucketNeverOvershootsUnderConcurrency() {
    String name = name();
    AtomicInteger added = new AtomicInteger();
    Concurrently.run(8, 40, (t, i) -> {
      try {
        tally.leakyBucket(name, 100, Duration.ofHours(1)).add(1);
        added.incrementAndGet();
      } catch (BucketFullException expected) {
        assertThat(expected.state().remaining()).isZero();
      }
    });
    assertThat(added).hasValue(100);
  }

  /** Skips a case a store on its server's own clock cannot show ({@link StoreConfiguration#onServerClock}). */
  private void assumeKitClock(String needs) {
    StoreConfiguration c = configuration();
    org.junit.jupiter.api.Assumptions.assumeTrue(c == null || c.decidesAtTheKitsClock(),
        () -> "needs " + needs + "; " + c + " decides on its server's clock");
  }

  // ------------------------------------------------------------------ one key space

  @Test
  public void aKeyIsEitherACounterOrALimiter() {
    String counter = name();
    tally.counters().incr(counter);
    RateLimiter overCounter = tally.limiter(counter, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThatThrownBy(overCounter::tryAcquire)
        .isInstanceOfSatisfying(WrongKindException.class,
            e -> assertThat(e.held()).isEqualTo(WrongKindException.Kind.COUNTER));
    assertThat(tally.counters().get(counter)).hasValue(1);

    String limiter = name();
    assertThat(tally.limiter(limiter, Limit.tokenBucket(5, Duration.ofMinutes(1))).tryAcquire()).isTrue();
    assertThatThrownBy(() -> tally.counters().incr(limiter))
        .isInstanceOfSatisfying(WrongKindException.class,
            e -> assertThat(e.held()).isEqualTo(WrongKindException.Kind.LIMITER));
    assertThat(tally.limiter(limiter, Limit.tokenBucket(5, Duration.ofMinutes(1))).available()).isEqualTo(4);
  }

  /**
   * Every counter operation on a live limiter's name, reads included, is refused: a read that
   * answered "missing" would let a caller conclude the name is free, and a write would destroy the
   * limiter's state.
   */
  @Test
  public void counterOperationsOnALimitersNameAreRefusedAndChangeNothing() {
    String limiter = name();
    RateLimiter l = tally.limiter(limiter, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThat(l.tryAcquire()).isTrue();
    Counters c = tally.counters();
    Map<String, ThrowingCallable> calls = new LinkedHashMap<>();
    calls.put("get", () -> c.get(limiter));
    calls.put("getDouble", () -> c.getDouble(limiter));
    calls.put("ttl", () -> c.ttl(limiter));
    calls.put("expiry", () -> c.expiry(limiter));
    calls.put("touch", () -> c.touch(limiter, Duration.ofMinutes(5)));
    calls.put("add", () -> c.add(limiter, 1));
    calls.put("put", () -> c.put(limiter, 3));
    calls.put("pop", () -> c.pop(limiter));
    calls.put("popDouble", () -> c.popDouble(limiter));
    calls.put("delete", () -> c.delete(limiter));
    calls.put("incr", () -> c.incr(limiter));
    calls.put("incrExisting", () -> c.incrExisting(limiter, 1));
    calls.put("incr (double)", () -> c.incr(limiter, 0.5));
    calls.forEach((what, call) -> assertThatThrownBy(call).as(what)
        .isInstanceOfSatisfying(WrongKindException.class,
            e -> assertThat(e.held()).isEqualTo(WrongKindException.Kind.LIMITER)));
    assertThat(c.keys(limiter)).as("keys lists counters").isEmpty();
    assertThat(l.available()).as("the limiter, untouched").isEqualTo(4);
  }

  /** A transaction that names a live limiter is refused whole, and changes nothing. */
  @Test
  public void aTransactionOnALimitersNameIsRefusedAndChangesNothing() {
    String tag = "{" + name() + "}"; // one hash slot, for stores that need a transaction's keys together
    String limiter = tag + ":limiter";
    String counter = tag + ":counter";
    RateLimiter l = tally.limiter(limiter, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThat(l.tryAcquire()).isTrue();
    assertThatThrownBy(() -> tally.counters().transaction(tx -> tx.incr(counter).get(limiter)))
        .isInstanceOfSatisfying(WrongKindException.class,
            e -> assertThat(e.held()).isEqualTo(WrongKindException.Kind.LIMITER));
    assertThat(tally.counters().get(counter)).as("all or none").isEmpty();
    assertThat(l.available()).isEqualTo(4);
  }

  /** Every limiter operation on a live counter's name is refused, and the counter stays. */
  @Test
  public void limiterOperationsOnACountersNameAreRefusedAndChangeNothing() {
    String counter = name();
    tally.counters().incr(counter, 7);
    RateLimiter l = tally.limiter(counter, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    Map<String, ThrowingCallable> calls = new LinkedHashMap<>();
    calls.put("tryAcquire", l::tryAcquire);
    calls.put("tryAcquire(0)", () -> l.tryAcquire(0));
    calls.put("available", l::available);
    calls.put("refund", () -> l.refund(1));
    calls.put("reset", l::reset);
    calls.put("reconfigure", () -> l.reconfigure(Limit.tokenBucket(9, Duration.ofMinutes(1))));
    calls.forEach((what, call) -> assertThatThrownBy(call).as(what)
        .isInstanceOfSatisfying(WrongKindException.class,
            e -> assertThat(e.held()).isEqualTo(WrongKindException.Kind.COUNTER)));
    assertThat(tally.counters().get(counter)).as("the counter, untouched").hasValue(7);
  }

  // ------------------------------------------------------------------ bad input

  @Test
  public void badLimitsAreRefusedWhenMade() {
    assertThatThrownBy(() -> Limit.tokenBucket(0, Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capacity");
    assertThatThrownBy(() -> Limit.tokenBucket(-5, Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Limit.tokenBucket(10, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Limit.leakyBucket(10, Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Limit.gcra(-1, 10, Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Limit.fixedWindow(0, Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Limit.tokenBucket(Long.MAX_VALUE, 1, Duration.ofDays(365)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("73 years");
    assertThatThrownBy(() -> tally.limiter(name())).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> tally.limiter("", Limit.tokenBucket(1, Duration.ofSeconds(1))))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  public void hugeRatesAndLongPeriodsDoNotOverflow() {
    RateLimiter fast = tally.limiter(name(), Limit.tokenBucket(1_000_000_000_000L, Duration.ofSeconds(1)));
    assertThat(fast.tryAcquire(999_999_999_999L)).isTrue();
    assertThat(fast.available()).isEqualTo(1);
    clock.set(Instant.EPOCH.plus(Duration.ofDays(3650 * 5))); // a window boundary
    RateLimiter slow = tally.limiter(name(), Limit.slidingWindow(4_000_000_000_000L, Duration.ofDays(3650)));
    assertThat(slow.tryAcquire(3_999_999_999_999L)).isTrue();
    clock.advance(Duration.ofDays(3650 + 1825)); // halfway through the next window
    assertThat(slow.available()).isBetween(1_999_999_999_999L, 2_000_000_000_001L);
  }
}
