package dev.tally.internal;

import static dev.tally.internal.Gen.w;
import static dev.tally.internal.Timelines.big;

import java.math.BigInteger;
import org.junit.jupiter.api.Test;

/** The 128-bit helpers agree with arbitrary-precision arithmetic on every non-negative long. */
class ArithProperties {
  private static final BigInteger MAX = big(Long.MAX_VALUE);

  /** Four operands of a check. */
  record Args(long a, long b, long c, long d) {}

  @Test
  void productComparisonIsExact() {
    Gen<Long> operands = operands();
    Property.forAll(100_000, random -> new Args(operands.next(random), operands.next(random), operands.next(random), operands.next(random)),
        x -> {
          boolean expected = big(x.a()).multiply(big(x.b())).compareTo(big(x.c()).multiply(big(x.d()))) <= 0;
          LimiterChecks.check(Arith.productLessOrEqual(x.a(), x.b(), x.c(), x.d()) == expected,
              x.a() + "·" + x.b() + " <= " + x.c() + "·" + x.d() + " should be " + expected);
        });
  }

  @Test
  void productComparisonIsExactNearEquality() {
    Gen<Long> operands = operands();
    Gen<Long> divisors = divisors();
    Gen<Long> small = Gen.longs(-2, 2);
    Property.forAll(100_000, random -> new Args(operands.next(random), operands.next(random), divisors.next(random), small.next(random)), x -> {
      long a = x.a();
      long b = x.b();
      long c = x.c();
      // d = a·b / c, rounded, give or take: the two products differ by less than c, and their low
      // words straddle every boundary some of the time.
      BigInteger q = big(a).multiply(big(b)).divide(big(c)).add(big(x.d()));
      if (q.signum() < 0 || q.compareTo(MAX) > 0) {
        return;
      }
      long d = q.longValueExact();
      boolean expected = big(a).multiply(big(b)).compareTo(big(c).multiply(big(d))) <= 0;
      LimiterChecks.check(Arith.productLessOrEqual(a, b, c, d) == expected,
          a + "·" + b + " <= " + c + "·" + d + " should be " + expected);
    });
  }

  @Test
  void mulDivRoundsAndSaturates() {
    Gen<Long> operands = operands();
    Gen<Long> divisors = divisors();
    Property.forAll(100_000, random -> new Args(operands.next(random), operands.next(random), divisors.next(random), 0), x -> {
      long a = x.a();
      long b = x.b();
      long c = x.c();
      BigInteger[] qr = big(a).multiply(big(b)).divideAndRemainder(big(c));
      BigInteger floor = qr[0];
      BigInteger ceil = qr[1].signum() == 0 ? floor : floor.add(BigInteger.ONE);
      LimiterChecks.check(big(Arith.floorMulDiv(a, b, c)).equals(floor.min(MAX)), "floor(" + a + "·" + b + "/" + c + ")");
      LimiterChecks.check(big(Arith.ceilMulDiv(a, b, c)).equals(ceil.min(MAX)), "ceil(" + a + "·" + b + "/" + c + ")");
    });
  }

  private static Gen<Long> operands() {
    return Gen.frequencyOf(
        w(2, Gen.longs(0, 1000)),
        w(3, Gen.longs(0, Long.MAX_VALUE)),
        w(2, Gen.ints(0, 63).map(k -> (1L << k) - 1 + (k % 3))),
        w(1, Gen.longs(Long.MAX_VALUE - 3, Long.MAX_VALUE)));
  }

  private static Gen<Long> divisors() {
    return operands().filter(v -> v > 0);
  }
}
