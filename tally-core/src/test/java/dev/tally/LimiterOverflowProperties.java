package dev.tally;

import static dev.tally.LimiterChecks.check;
import static dev.tally.Timelines.big;

import dev.tally.Timelines.Extra;
import dev.tally.Timelines.Timeline;
import java.math.BigInteger;
import java.time.Duration;
import java.time.ZoneOffset;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * Extreme parameters: capacities and windows up to the largest span a limit may have, periods of
 * decades, allowances and permits up to {@link Long#MAX_VALUE}, clocks near the end of the range.
 * A limit is either refused when made, with an {@link IllegalArgumentException}, exactly when its
 * documented rules say so, or it runs without any exception, agrees with its exact-arithmetic
 * model and makes only self-consistent decisions: nothing wraps around.
 */
class LimiterOverflowProperties {
  private static final BigInteger MAX_SPAN = big(Limit.MAX_SPAN_NANOS);
  private static final BigInteger NANOS_PER_SECOND = big(1_000_000_000L);

  enum Factory {
    TOKEN_BUCKET, TOKEN_BUCKET_FULL_REFILL, LEAKY_BUCKET, GCRA, FIXED_WINDOW, SLIDING_WINDOW, QUOTA
  }

  @Property(tries = 10_000)
  void limitsAreRefusedExactlyWhenTheRulesSay(
      @ForAll Factory factory, @ForAll("numbers") long a, @ForAll("numbers") long b, @ForAll("durations") Duration p) {
    BigInteger nanos = big(p.getSeconds()).multiply(NANOS_PER_SECOND).add(big(p.getNano()));
    boolean periodOk = nanos.signum() > 0 && nanos.bitLength() <= 63;
    Limit made;
    try {
      made = make(factory, a, b, p);
    } catch (IllegalArgumentException e) {
      made = null;
    }
    Long expectedLimit; // null: must be refused
    BigInteger expectedInterval = null;
    switch (factory) {
      case TOKEN_BUCKET:
      case TOKEN_BUCKET_FULL_REFILL: {
        long refill = factory == Factory.TOKEN_BUCKET ? b : a;
        boolean ok = a > 0 && refill > 0 && periodOk;
        expectedInterval = ok ? ceilDiv(nanos, big(refill)) : null;
        expectedLimit = ok && big(a).multiply(expectedInterval).compareTo(MAX_SPAN) <= 0 ? a : null;
        break;
      }
      case LEAKY_BUCKET: {
        boolean ok = a > 0 && periodOk;
        expectedInterval = ok ? ceilDiv(nanos, big(a)) : null;
        expectedLimit = ok && big(a).multiply(expectedInterval).compareTo(MAX_SPAN) <= 0 ? a : null;
        break;
      }
      case GCRA: {
        boolean ok = a >= 0 && a < Long.MAX_VALUE && b > 0 && periodOk;
        expectedInterval = ok ? ceilDiv(nanos, big(b)) : null;
        expectedLimit = ok && big(a + 1).multiply(expectedInterval).compareTo(MAX_SPAN) <= 0 ? a + 1 : null;
        break;
      }
      case FIXED_WINDOW:
      case SLIDING_WINDOW:
        expectedInterval = nanos;
        expectedLimit = a > 0 && periodOk && nanos.compareTo(MAX_SPAN) <= 0 ? a : null;
        break;
      case QUOTA:
        expectedLimit = a > 0 ? a : null;
        break;
      default:
        throw new AssertionError(factory);
    }
    if (expectedLimit == null) {
      check(made == null, factory + "(" + a + ", " + b + ", " + p + ") should be refused, made " + made);
      return;
    }
    check(made != null, factory + "(" + a + ", " + b + ", " + p + ") should be made");
    check(made.limit() == expectedLimit, made + ": limit " + made.limit() + ", expected " + expectedLimit);
    if (factory != Factory.QUOTA) {
      check(big(made.intervalNanos()).equals(expectedInterval),
          made + ": interval " + made.intervalNanos() + ", expected " + expectedInterval);
    }
  }

  private static Limit make(Factory factory, long a, long b, Duration p) {
    switch (factory) {
      case TOKEN_BUCKET:
        return Limit.tokenBucket(a, b, p);
      case TOKEN_BUCKET_FULL_REFILL:
        return Limit.tokenBucket(a, p);
      case LEAKY_BUCKET:
        return Limit.leakyBucket(a, p);
      case GCRA:
        return Limit.gcra(a, b, p);
      case FIXED_WINDOW:
        return Limit.fixedWindow(a, p);
      case SLIDING_WINDOW:
        return Limit.slidingWindow(a, p);
      case QUOTA:
        return Limit.quota(a, b % 2 == 0 ? Limit.Period.DAY : Limit.Period.MONTH, ZoneOffset.UTC);
      default:
        throw new AssertionError(factory);
    }
  }

  private static BigInteger ceilDiv(BigInteger a, BigInteger b) {
    BigInteger[] qr = a.divideAndRemainder(b);
    return qr[1].signum() == 0 ? qr[0] : qr[0].add(BigInteger.ONE);
  }

  @Provide
  Arbitrary<Long> numbers() {
    long span = Limit.MAX_SPAN_NANOS;
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.longs().between(-3, 30)),
        Tuple.of(3, Arbitraries.longs()),
        Tuple.of(2, Arbitraries.longs().between(Long.MAX_VALUE - 3, Long.MAX_VALUE)),
        Tuple.of(1, Arbitraries.longs().between(Long.MIN_VALUE, Long.MIN_VALUE + 3)),
        Tuple.of(2, Arbitraries.longs().between(span - 3, span + 3)),
        Tuple.of(2, Arbitraries.longs().between(1, 64).map(k -> span / k + k % 3 - 1)));
  }

  @Provide
  Arbitrary<Duration> durations() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.longs().map(Duration::ofNanos)),
        Tuple.of(2, Arbitraries.longs().between(-3, 3_000_000_000L).map(Duration::ofNanos)),
        Tuple.of(2, Arbitraries.longs().between(-10, 1_000_000).map(Duration::ofSeconds)),
        Tuple.of(2, Arbitraries.longs().between(Limit.MAX_SPAN_NANOS - 3, Limit.MAX_SPAN_NANOS + 3).map(Duration::ofNanos)),
        Tuple.of(2, Arbitraries.longs().between(Long.MAX_VALUE - 3, Long.MAX_VALUE).map(Duration::ofNanos)),
        Tuple.of(1, Arbitraries.longs().between(9_223_372_035L, 9_223_372_037L)
            .flatMap(s -> Arbitraries.longs().between(0, 999_999_999).map(n -> Duration.ofSeconds(s, n)))),
        Tuple.of(1, Arbitraries.longs().between(0, 200_000).map(Duration::ofDays)),
        Tuple.of(1, Arbitraries.longs().map(Duration::ofSeconds)));
  }

  @Property(tries = 1000)
  void hugeLimitsAgreeWithTheirModels(@ForAll("hugeSingles") Timeline t) {
    LimiterChecks.agreesWithModel(t);
    LimiterChecks.decisionsAreSane(t);
  }

  @Property(tries = 500)
  void hugeComposedDecisionsAreExact(@ForAll("hugePairs") Timeline t) {
    LimiterChecks.decisionsAreSane(t);
  }

  @Provide
  Arbitrary<Timeline> hugeSingles() {
    return Timelines.timelines(Timelines.anyLimit(true), Extra.RESET);
  }

  @Provide
  Arbitrary<Timeline> hugePairs() {
    return Timelines.pairs(Timelines.anyLimit(true), Timelines.anyLimit(true), Extra.RESET);
  }
}
