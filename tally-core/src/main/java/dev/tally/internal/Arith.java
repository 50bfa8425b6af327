package dev.tally.internal;

import java.math.BigInteger;

/**
 * Exact integer arithmetic for limiters: products of a count and a duration in nanoseconds
 * overflow 64 bits long before either does (a billion requests per day is 8.6e22 unit-nanos),
 * so comparisons of such products are done in 128 bits and never wrap.
 */
final class Arith {
  private Arith() {}

  /** Whether {@code a * b <= c * d}, for non-negative operands, exactly. */
  static boolean productLessOrEqual(long a, long b, long c, long d) {
    long hi1 = Math.multiplyHigh(a, b);
    long hi2 = Math.multiplyHigh(c, d);
    if (hi1 != hi2) {
      return hi1 < hi2;
    }
    return Long.compareUnsigned(a * b, c * d) <= 0;
  }

  /** {@code floor(a * b / c)} for non-negative {@code a, b} and positive {@code c}, saturating. */
  static long floorMulDiv(long a, long b, long c) {
    if (Math.multiplyHigh(a, b) == 0 && a * b >= 0) {
      return a * b / c;
    }
    BigInteger q = BigInteger.valueOf(a).multiply(BigInteger.valueOf(b)).divide(BigInteger.valueOf(c));
    return q.bitLength() <= 63 ? q.longValue() : Long.MAX_VALUE; // up to 2^63 - 1 fits
  }

  /** {@code ceil(a * b / c)} for non-negative {@code a, b} and positive {@code c}, saturating. */
  static long ceilMulDiv(long a, long b, long c) {
    long f = floorMulDiv(a, b, c);
    if (f == Long.MAX_VALUE) {
      return f;
    }
    // exact iff f * c == a * b
    return productLessOrEqual(a, b, f, c) ? f : f + 1;
  }

  /** {@code a + b}, saturating at {@link Long#MAX_VALUE} (both non-negative). */
  static long saturatedAdd(long a, long b) {
    long r = a + b;
    return r < 0 ? Long.MAX_VALUE : r;
  }
}
