package dev.tally.spi;

import dev.tally.Limit;
import java.time.ZoneId;
import java.util.List;

/**
 * A limiter call as the ports of the limiter machine on a store's server read it (Redis'
 * {@code limiter.lua}, PostgreSQL's {@code limit_step}): one encoding, so that every port is
 * handed the same thing and the kit's limiter vectors check them all against the one machine.
 *
 * <ul>
 *   <li>the operation as a word ({@link #operation}): {@code acquire}, {@code peek},
 *       {@code refund}, {@code reset}, {@code reconfigure}, {@code topup}, {@code charge};
 *   <li>the caller's limits as three integers each ({@link #limits}): the tag word of
 *       {@link LimiterRecord} (the limit's kind and the caller's version), then the record's
 *       parameter words p0 and p1, exactly as a fresh record of these limits holds them;
 *   <li>for a bucket with a warm-up (its cold factor in the tag word), the warm-up period in
 *       nanoseconds ({@link #warmUpNanos}), the record's state word s1;
 *   <li>for a quota in a zone, the eight period starts of {@link QuotaBoundaries} around the
 *       caller's clock ({@link #quotaStarts}), since neither server reads a time-zone database.
 * </ul>
 *
 * How each port passes them (decimal strings in {@code ARGV}, SQL arrays) is the port's own.
 */
public final class LimiterArguments {
  /** Integers per limit in {@link #limits}. */
  public static final int PER_LIMIT = 3;

  private LimiterArguments() {}

  /** The operation's word. */
  public static String operation(LimiterOperation op) {
    return switch (op) {
      case ACQUIRE -> "acquire";
      case PEEK -> "peek";
      case REFUND -> "refund";
      case RESET -> "reset";
      case RECONFIGURE -> "reconfigure";
      case TOP_UP -> "topup";
      case CHARGE -> "charge";
    };
  }

  /** {@code tag, p0, p1} per limit of {@code call}, in order, each tag with the caller's version. */
  public static long[] limits(LimiterCall call) {
    List<Limit> limits = call.limits();
    long[] a = new long[PER_LIMIT * limits.size()];
    for (int i = 0; i < limits.size(); i++) {
      Limit l = limits.get(i);
      a[PER_LIMIT * i] = LimiterRecord.tag(LimiterRecord.limitTag(l), call.version());
      a[PER_LIMIT * i + 1] = l.limit();
      a[PER_LIMIT * i + 2] = l.intervalNanos();
    }
    return a;
  }

  /** The warm-up period of limit {@code i} of {@code call} in nanoseconds, or 0 for none. */
  public static long warmUpNanos(LimiterCall call, int i) {
    return call.limits().get(i).warmUpNanos();
  }

  /**
   * The period starts of limit {@code i} of {@code call} around {@code nowNanos}, or null for a
   * limit without a zone.
   */
  public static QuotaBoundaries quotaStarts(LimiterCall call, int i, long nowNanos) {
    ZoneId zone = call.limits().get(i).zone();
    return zone == null ? null : QuotaBoundaries.around(zone, nowNanos);
  }
}
