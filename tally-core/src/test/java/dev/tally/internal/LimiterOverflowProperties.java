package dev.tally.internal;

import dev.tally.Limit;
import static dev.tally.internal.Gen.w;
import static dev.tally.internal.LimiterChecks.check;
import static dev.tally.internal.Timelines.big;

import dev.tally.internal.Timelines.Extra;
import dev.tally.internal.Timelines.Timeline;
import java.math.BigInteger;
import java.time.Duration;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

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

  /** What a limit is made of: a factory and its arguments. */
  record Args(Factory factory, long a, long b, Duration p) {}

  @Test
  void limitsAreRefusedExactlyWhenTheRulesSay() {
    Gen<Factory> factories = Gen.of(Factory.class);
    Gen<Long> numbers = numbers();
    Gen<Duration> durations = durations();
    Property.forAll(100_000, random -> new Args(factories.next(random), numbers.next(random), numbers.next(random), durations.next(random)),
        x -> refusedExactlyWhenTheRulesSay(x.factory(), x.a(), x.b(), x.p()));
  }

  private static void refusedExactlyWhenTheRulesSay(Factory factory, long a, long b, Duration p) {
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

  private static Gen<Long> numbers() {
    long span = Limit.MAX_SPAN_NANOS;
    return Gen.frequencyOf(
        w(3, Gen.longs(-3, 30)),
        w(3, Gen.longs()),
        w(2, Gen.longs(Long.MAX_VALUE - 3, Long.MAX_VALUE)),
        w(1, Gen.longs(Long.MIN_VALUE, Long.MIN_VALUE + 3)),
        w(2, Gen.longs(span - 3, span + 3)),
        w(2, Gen.longs(1, 64).map(k -> span / k + k % 3 - 1)));
  }

  private static Gen<Duration> durations() {
    return Gen.frequencyOf(
        w(3, Gen.longs().map(Duration::ofNanos)),
        w(2, Gen.longs(-3, 3_000_000_000L).map(Duration::ofNanos)),
        w(2, Gen.longs(-10, 1_000_000).map(Duration::ofSeconds)),
        w(2, Gen.longs(Limit.MAX_SPAN_NANOS - 3, Limit.MAX_SPAN_NANOS + 3).map(Duration::ofNanos)),
        w(2, Gen.longs(Long.MAX_VALUE - 3, Long.MAX_VALUE).map(Duration::ofNanos)),
        w(1, Gen.longs(9_223_372_035L, 9_223_372_037L)
            .flatMap(s -> Gen.longs(0, 999_999_999).map(n -> Duration.ofSeconds(s, n)))),
        w(1, Gen.longs(0, 200_000).map(Duration::ofDays)),
        w(1, Gen.longs().map(Duration::ofSeconds)));
  }

  @Test
  void hugeLimitsAgreeWithTheirModels() {
    Property.forAll(4000, hugeSingles(), t -> {
      LimiterChecks.agreesWithModel(t);
      LimiterChecks.decisionsAreSane(t);
    });
  }

  @Test
  void hugeComposedDecisionsAreExact() {
    Property.forAll(2000, hugePairs(), t -> {
      LimiterChecks.decisionsAreSane(t);
    });
  }

  private static Gen<Timeline> hugeSingles() {
    return Timelines.timelines(Timelines.anyLimit(true), Extra.RESET);
  }

  private static Gen<Timeline> hugePairs() {
    return Timelines.pairs(Timelines.anyLimit(true), Timelines.anyLimit(true), Extra.RESET);
  }
}
