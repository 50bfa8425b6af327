package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Warm-up ({@link Limit#warmUp}), for every store: a cold limiter grants at a fraction of its
 * rate, and the interval between units falls to the configured one along the documented curve
 * ({@code docs/limiters.md#warm-up}), to the nanosecond, on the fixture's manual clock.
 *
 * <p>The limits: 10 units, one more every 100 ms ({@code T}), warming up over 10 s ({@code W})
 * from a third of the rate ({@code k = 3}), as a token bucket, a leaky bucket and GCRA.
 */
public abstract class WarmUpContract extends TallyFixture {
  private static final long T = 100_000_000L;
  private static final long W = 10_000_000_000L;
  private static final int K = 3;
  private static final long C = 10;

  /** The three buckets, each with the same warm-up. */
  public static Stream<Arguments> buckets() {
    Duration w = Duration.ofNanos(W);
    return Stream.of(
        Arguments.of("token bucket", Limit.tokenBucket(C, Duration.ofSeconds(1)).warmUp(w, K)),
        Arguments.of("leaky bucket", Limit.leakyBucket(C, Duration.ofSeconds(1)).warmUp(w, K)),
        Arguments.of("GCRA", Limit.gcra(C - 1, C, Duration.ofSeconds(1)).warmUp(w, K)));
  }

  /** The documented cost of a unit {@code e} nanoseconds into the warm-up: {@code T + ceil((k-1)·T·(W-e)/W)}. */
  private static long cost(long e) {
    long left = W - Math.min(W, e);
    long extra = (K - 1) * T * left; // below 2^63 for these limits
    return T + extra / W + (extra % W == 0 ? 0 : 1);
  }

  /** Skips a case a store on its server's own clock cannot show ({@link StoreConfiguration#onServerClock}). */
  private void assumeKitClock(String needs) {
    StoreConfiguration c = configuration();
    org.junit.jupiter.api.Assumptions.assumeTrue(c == null || c.decidesAtTheKitsClock(),
        () -> "needs " + needs + "; " + c + " decides on its server's clock");
  }

  private RateLimiter limiter(Limit limit) {
    return tally.limiter("tck-warm-" + UUID.randomUUID().toString().substring(0, 8), limit);
  }

  /** Takes units one by one at the current instant until one is refused; returns how many. */
  private static int drain(RateLimiter l) {
    int granted = 0;
    while (l.decide(1).allowed()) {
      granted++;
    }
    return granted;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("buckets")
  public void aColdLimiterGrantsABurstOfOneUnitAndAThirdOfTheRest(String kind, Limit limit) {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    RateLimiter l = limiter(limit);
    Decision first = l.decide(0);
    assertThat(first.remaining()).isEqualTo(1 + (C - 1) / K);
    assertThat(drain(l)).isEqualTo(1 + (C - 1) / K); // 4, where a warm bucket grants 10
  }

  /**
   * After the cold burst, units come one at a time, each exactly {@code I(t)} after the last:
   * {@code 3T} at the cold start, falling linearly to {@code T} at the end of the warm-up, and
   * {@code T} from then on. Each unit is refused a nanosecond before its instant.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("buckets")
  public void unitsFollowTheWarmUpCurveToTheNanosecond(String kind, Limit limit) {
    assumeKitClock("decisions to the nanosecond");
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    long t0 = clock.nanos();
    RateLimiter l = limiter(limit);
    drain(l);
    long last = t0;
    List<Long> grants = new ArrayList<>();
    while (last - t0 < W + 1_000_000_000L) { // through the warm-up and a second past it
      Decision denied = l.decide(1);
      assertThat(denied.allowed()).isFalse();
      long wait = denied.retryAfterNanos();
      assertThat(wait).isPositive();
      clock.advanceNanos(wait - 1);
      assertThat(l.decide(1).allowed()).as("a nanosecond early, %s ns after the cold start", clock.nanos() - t0)
          .isFalse();
      clock.advanceNanos(1);
      assertThat(l.decide(1).allowed()).isTrue();
      long at = clock.nanos();
      if (!grants.isEmpty()) {
        assertThat(at - last).as("the interval after the unit granted %s ns into the warm-up", last - t0)
            .isEqualTo(cost(last - t0));
      }
      grants.add(at);
      last = at;
    }
    // The curve, second by second: about 3.3 units in the first, 10 in the last and after it.
    int[] perSecond = new int[11];
    for (long at : grants) {
      int s = (int) ((at - t0) / 1_000_000_000L);
      if (s < perSecond.length) {
        perSecond[s]++;
      }
    }
    assertThat(perSecond[0]).isBetween(3, 4); // after the burst, at a third of the rate
    for (int s = 1; s < 10; s++) {
      assertThat(perSecond[s]).as("second %s", s).isGreaterThanOrEqualTo(perSecond[s - 1]);
    }
    assertThat(perSecond[10]).isEqualTo(10); // warm: the full rate
  }

  /**
   * Cold is read off the stored state: a limiter full and untouched for the warm-up period is
   * still warm, and one nanosecond longer is cold again.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("buckets")
  public void aLimiterIdleForLongerThanTheWarmUpIsColdAgain(String kind, Limit limit) {
    assumeKitClock("an idle time to the nanosecond");
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    RateLimiter l = limiter(limit);
    drain(l);
    clock.advanceNanos(W);
    assertThat(drain(l)).isEqualTo(C); // warm: the whole burst
    clock.advanceNanos(C * T + W); // full for exactly the warm-up: still warm
    assertThat(drain(l)).isEqualTo(C);
    clock.advanceNanos(C * T + W + 1); // full for a nanosecond longer: cold
    assertThat(drain(l)).isEqualTo(1 + (C - 1) / K);
  }

  /** A peek on a cold limiter starts its warm-up too: the ramp runs from the first call, whatever it is. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("buckets")
  public void theFirstCallOnAColdLimiterStartsItsWarmUp(String kind, Limit limit) {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    RateLimiter l = limiter(limit);
    assertThat(l.decide(0).allowed()).isTrue();
    clock.advanceNanos(W / 2);
    // Half-way: a unit costs 2T, so the burst is 1 + floor(9T / 2T) = 5.
    assertThat(drain(l)).isEqualTo(1 + (C - 1) * T / cost(W / 2));
  }

  /** Turning the warm-up off (a newer version of the limits) keeps what was consumed; turning it on starts warm. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("buckets")
  public void reconfiguringTheWarmUpKeepsWhatWasConsumed(String kind, Limit limit) {
    clock.set(Instant.parse("2026-12-01T00:00:00Z"));
    String name = "tck-warm-" + UUID.randomUUID().toString().substring(0, 8);
    RateLimiter cold = tally.limiter(name, limit);
    assertThat(cold.decide(2).allowed()).isTrue(); // 2 units at 3T each: 6T of the bucket in use
    Limit plain = Limit.tokenBucket(C, Duration.ofSeconds(1));
    RateLimiter off = tally.limiter(name, plain).withVersion(1);
    // A call that takes something: a store may keep an upgrade only with a change (DynamoDB).
    Decision d = off.decide(1);
    assertThat(d.mismatch()).isEqualTo(Decision.Mismatch.UPGRADED);
    assertThat(d.remaining()).isEqualTo(C - 3); // the 2 units carried over, and this one
    RateLimiter on = tally.limiter(name, limit).withVersion(2);
    Decision warm = on.decide(0);
    assertThat(warm.mismatch()).isEqualTo(Decision.Mismatch.UPGRADED);
    assertThat(warm.remaining()).isEqualTo(C - 3); // counted as warm: units cost T, not 3T
  }
}
