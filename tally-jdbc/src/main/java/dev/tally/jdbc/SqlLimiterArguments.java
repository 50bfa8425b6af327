package dev.tally.jdbc;

import dev.tally.spi.LimiterArguments;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.QuotaBoundaries;

/**
 * The SPI's encoding of a limiter call ({@link LimiterArguments}) as the SQL arrays the schema's
 * {@code <table>_limit} function takes: the caller's limits as {@code tag, p0, p1} triples, and
 * for each quota in a zone the boundaries of its days and months around an instant.
 *
 * <p>The function decides on the database's clock but reads no time zone database: PostgreSQL's
 * may be older or newer than the JVM's, and the two must draw a day's boundary at the same
 * instant. So the caller sends, per limit, the starts of four consecutive days and four
 * consecutive months in the quota's zone around its own clock (java.time, daylight saving
 * included); the function takes the first one after its now, and refuses with
 * {@code TALLY_CLOCK_SKEW} when its clock and the caller's disagree by more than a day.
 */
final class SqlLimiterArguments {

  private SqlLimiterArguments() {}

  /** {@code tag, p0, p1} per limit, each tag with the caller's version (LimiterRecord.tag). */
  static Long[] limits(LimiterCall call) {
    long[] words = LimiterArguments.limits(call);
    Long[] a = new Long[words.length];
    for (int i = 0; i < a.length; i++) {
      a[i] = words[i];
    }
    return a;
  }

  /**
   * Eight epoch seconds per limit, nulls for a limit without a zone; for a bucket with a warm-up,
   * its period in nanoseconds first; null if no limit has either.
   */
  static Long[] zones(LimiterCall call, long around) {
    int n = call.limits().size();
    Long[] z = null;
    for (int i = 0; i < n; i++) {
      QuotaBoundaries b = LimiterArguments.quotaStarts(call, i, around);
      long warmUp = LimiterArguments.warmUpNanos(call, i);
      if (b != null || warmUp != 0) {
        if (z == null) {
          z = new Long[8 * n];
        }
      }
      if (b != null) {
        for (int j = 0; j < 8; j++) {
          z[8 * i + j] = b.start(j);
        }
      } else if (warmUp != 0) {
        z[8 * i] = warmUp; // a bucket's warm-up period rides in its first boundary's place
      }
    }
    return z;
  }
}
