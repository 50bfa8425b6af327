package dev.tally.spi;

/**
 * FNV-1a over a sequence of values, for {@link Mutation#fingerprint()}: small, stable across
 * processes and versions, and good enough to tell a reused operation id from a retry (the
 * consequence of a collision is only that a misused id is taken for a retry).
 */
final class Fingerprint {
  private static final long PRIME = 0x100000001b3L;
  private long h = 0xcbf29ce484222325L;

  private Fingerprint() {}

  static Fingerprint of(int kind) {
    return new Fingerprint().add(kind);
  }

  Fingerprint add(long v) {
    for (int i = 0; i < 8; i++) {
      h = (h ^ ((v >>> (i * 8)) & 0xff)) * PRIME;
    }
    return this;
  }

  Fingerprint add(boolean v) {
    return add(v ? 1L : 0L);
  }

  Fingerprint add(double v) {
    return add(Double.doubleToLongBits(v));
  }

  /** A value with its type: 1 then the long, or 2 then the double. */
  Fingerprint add(Number v) {
    return v instanceof Double d ? add(2L).add(d.doubleValue()) : add(1L).add(v.longValue());
  }

  /** The length, then each UTF-16 code unit (so "ab","c" and "a","bc" differ). */
  Fingerprint add(String s) {
    add(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      h = (h ^ (c & 0xff)) * PRIME;
      h = (h ^ (c >>> 8)) * PRIME;
    }
    return this;
  }

  long value() {
    return h;
  }
}
