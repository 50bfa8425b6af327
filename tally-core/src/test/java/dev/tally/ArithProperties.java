package dev.tally;

import static dev.tally.Timelines.big;

import java.math.BigInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/** The 128-bit helpers agree with arbitrary-precision arithmetic on every non-negative long. */
class ArithProperties {
  private static final BigInteger MAX = big(Long.MAX_VALUE);

  @Property(tries = 10_000)
  void productComparisonIsExact(@ForAll("operands") long a, @ForAll("operands") long b,
      @ForAll("operands") long c, @ForAll("operands") long d) {
    boolean expected = big(a).multiply(big(b)).compareTo(big(c).multiply(big(d))) <= 0;
    LimiterChecks.check(Arith.productLessOrEqual(a, b, c, d) == expected,
        a + "·" + b + " <= " + c + "·" + d + " should be " + expected);
  }

  @Property(tries = 10_000)
  void productComparisonIsExactNearEquality(@ForAll("operands") long a, @ForAll("operands") long b,
      @ForAll("divisors") long c, @ForAll("small") long delta) {
    // d = a·b / c, rounded, give or take: the two products differ by less than c, and their low
    // words straddle every boundary some of the time.
    BigInteger q = big(a).multiply(big(b)).divide(big(c)).add(big(delta));
    if (q.signum() < 0 || q.compareTo(MAX) > 0) {
      return;
    }
    long d = q.longValueExact();
    boolean expected = big(a).multiply(big(b)).compareTo(big(c).multiply(big(d))) <= 0;
    LimiterChecks.check(Arith.productLessOrEqual(a, b, c, d) == expected,
        a + "·" + b + " <= " + c + "·" + d + " should be " + expected);
  }

  @Property(tries = 10_000)
  void mulDivRoundsAndSaturates(@ForAll("operands") long a, @ForAll("operands") long b, @ForAll("divisors") long c) {
    BigInteger[] qr = big(a).multiply(big(b)).divideAndRemainder(big(c));
    BigInteger floor = qr[0];
    BigInteger ceil = qr[1].signum() == 0 ? floor : floor.add(BigInteger.ONE);
    LimiterChecks.check(big(Arith.floorMulDiv(a, b, c)).equals(floor.min(MAX)), "floor(" + a + "·" + b + "/" + c + ")");
    LimiterChecks.check(big(Arith.ceilMulDiv(a, b, c)).equals(ceil.min(MAX)), "ceil(" + a + "·" + b + "/" + c + ")");
  }

  @Provide
  Arbitrary<Long> operands() {
    return Arbitraries.frequencyOf(
        Tuple.of(2, Arbitraries.longs().between(0, 1000)),
        Tuple.of(3, Arbitraries.longs().between(0, Long.MAX_VALUE)),
        Tuple.of(2, Arbitraries.integers().between(0, 63).map(k -> (1L << k) - 1 + (k % 3))),
        Tuple.of(1, Arbitraries.longs().between(Long.MAX_VALUE - 3, Long.MAX_VALUE)));
  }

  @Provide
  Arbitrary<Long> divisors() {
    return operands().filter(v -> v > 0);
  }

  @Provide
  Arbitrary<Long> small() {
    return Arbitraries.longs().between(-2, 2);
  }
}
