package dev.tally.jdbc;

import dev.tally.Limit;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterRecord;
import dev.tally.spi.QuotaBoundaries;
import java.time.ZoneId;
import java.util.List;

/**
 * The arguments of one call of the schema's {@code <table>_limit} function: the caller's limits
 * as {@code tag, p0, p1} triples, and for each quota in a zone the boundaries of its days and
 * months around an instant.
 *
 * <p>The function decides on the database's clock but reads no time zone database: PostgreSQL's
 * may be older or newer than the JVM's, and the two must draw a day's boundary at the same
 * instant. So the caller sends, per limit, the starts of four consecutive days and four
 * consecutive months in the quota's zone around its own clock (java.time, daylight saving
 * included); the function takes the first one after its now, and refuses with
 * {@code TALLY_CLOCK_SKEW} when its clock and the caller's disagree by more than a day.
 */
final class LimiterArguments {

  private LimiterArguments() {}

  static String code(LimiterOperation op) {
    return switch (op) {
      case ACQUIRE -> "acquire";
      case PEEK -> "peek";
      case REFUND -> "refund";
      case RESET -> "reset";
      case RECONFIGURE -> "reconfigure";
      case TOP_UP -> "topup";
    };
  }

  /** {@code tag, p0, p1} per limit, each tag with the caller's version (LimiterRecord.tag). */
  static Long[] limits(LimiterCall call) {
    List<Limit> limits = call.limits();
    Long[] a = new Long[3 * limits.size()];
    for (int i = 0; i < limits.size(); i++) {
      Limit l = limits.get(i);
      a[3 * i] = LimiterRecord.tag(l.kind().tag(), call.version());
      a[3 * i + 1] = l.limit();
      a[3 * i + 2] = l.intervalNanos();
    }
    return a;
  }

  /** Eight epoch seconds per limit, nulls for a limit without a zone; null if no limit has one. */
  static Long[] zones(LimiterCall call, long around) {
    List<Limit> limits = call.limits();
    Long[] z = null;
    for (int i = 0; i < limits.size(); i++) {
      ZoneId zone = limits.get(i).zone();
      if (zone != null) {
        if (z == null) {
          z = new Long[8 * limits.size()];
        }
        System.arraycopy(boundaries(zone, around), 0, z, 8 * i, 8);
      }
    }
    return z;
  }

  private static Long[] boundaries(ZoneId zone, long now) {
    QuotaBoundaries b = QuotaBoundaries.around(zone, now);
    Long[] starts = new Long[8];
    for (int i = 0; i < starts.length; i++) {
      starts[i] = b.start(i);
    }
    return starts;
  }
}
