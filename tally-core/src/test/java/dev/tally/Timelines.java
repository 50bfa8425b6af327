package dev.tally;

import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.zone.ZoneOffsetTransition;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.Tuple;

/**
 * Generated timelines of limiter calls for the property tests, and a driver that plays them on a
 * {@link LimiterMachine}.
 *
 * <p>A timeline is a list of limits, a start instant and steps; each step moves the clock forward
 * (by an absolute gap, to the next window or period boundary, or to the instant the last decision
 * named as retry-after or reset-after, give or take a nanosecond) and makes one call. Times are
 * epoch nanoseconds in {@code [0, 2^62)}, from 1970 to 2116: the range the machine is made for
 * (see {@link Algorithm}).
 *
 * <p>Parameters are mostly small, so that limits are hit and windows roll often, with a share of
 * huge ones (capacities and spans up to {@link Limit#MAX_SPAN_NANOS}, permits near
 * {@link Long#MAX_VALUE}) to exercise overflow safety.
 */
final class Timelines {
  static final long TIME_MAX = (1L << 62) - 1;
  static final long TIME_MIN = 0;
  static final long NEVER = Decision.NEVER;
  static final long SECOND = 1_000_000_000L;
  static final long HOUR = 3600 * SECOND;
  static final long DAY = 24 * HOUR;
  private static final long MAX_SPAN = Limit.MAX_SPAN_NANOS;
  private static final long PRESENT_FROM = 1_600_000_000L * SECOND; // 2020
  private static final long PRESENT_TO = 2_100_000_000L * SECOND; // 2036

  private Timelines() {}

  /** How the clock moves before a step's call. */
  enum Move {
    /** By {@code amount} nanoseconds. */
    BY,
    /** To the next boundary of the first limit (window, period, refill unit) plus {@code amount}. */
    TO_BOUNDARY,
    /** To the last denial's retry-after plus {@code amount} (no move if there is none). */
    TO_RETRY,
    /** To the last decision's reset-after plus {@code amount}. */
    TO_RESET
  }

  /** One call: move the clock, then run {@code op} with {@code permits}. */
  record Step(Move move, long amount, LimiterOperation op, long permits) {
    @Override
    public String toString() {
      return move + (amount >= 0 ? "+" : "") + amount + " " + op + " " + permits;
    }
  }

  /** Limits, a start instant and steps. */
  record Timeline(List<Limit> limits, long start, List<Step> steps) {
    @Override
    public String toString() {
      return "Timeline" + limits + " from " + start + " (" + steps.size() + " steps): " + steps;
    }
  }

  /** The operations a timeline may use besides ACQUIRE, PEEK and REFUND. */
  enum Extra {
    NONE,
    RESET
  }

  // ---------------------------------------------------------------------------------------------
  // Limits

  /** Token buckets, leaky buckets and GCRA limits alike. */
  static Arbitrary<Limit> buckets(boolean hugeOnly) {
    return Arbitraries.oneOf(tokenBuckets(hugeOnly), leakyBuckets(hugeOnly), gcras(hugeOnly));
  }

  /** {@code Limit.tokenBucket(C, R, P)} (and the two-argument form) for a chosen interval. */
  static Arbitrary<Limit> tokenBuckets(boolean hugeOnly) {
    return intervals(hugeOnly).flatMap(t -> Combinators.combine(
            units(MAX_SPAN / t, hugeOnly), units(Long.MAX_VALUE / t, hugeOnly), Arbitraries.longs().between(0, 9))
        .as((c, r, pick) -> {
          if (pick == 0 && c <= Long.MAX_VALUE / t) {
            return Limit.tokenBucket(c, Duration.ofNanos(c * t));
          }
          return Limit.tokenBucket(c, r, Duration.ofNanos(periodFor(t, r, pick)));
        }));
  }

  /** {@code Limit.leakyBucket(C, drainTime)}. */
  static Arbitrary<Limit> leakyBuckets(boolean hugeOnly) {
    return intervals(hugeOnly).flatMap(t -> Combinators.combine(
            units(MAX_SPAN / t, hugeOnly), Arbitraries.longs().between(0, 9))
        .as((c, pick) -> Limit.leakyBucket(c, Duration.ofNanos(periodFor(t, c, pick)))));
  }

  /** {@code Limit.gcra(maxBurst, count, period)}: capacity is {@code maxBurst + 1}. */
  static Arbitrary<Limit> gcras(boolean hugeOnly) {
    return intervals(hugeOnly).flatMap(t -> Combinators.combine(
            units(MAX_SPAN / t, hugeOnly), units(Long.MAX_VALUE / t, hugeOnly), Arbitraries.longs().between(0, 9))
        .as((c, count, pick) -> Limit.gcra(c - 1, count, Duration.ofNanos(periodFor(t, count, pick)))));
  }

  /**
   * A period of {@code P} nanoseconds with {@code ceil(P / units) == t}: exactly {@code t·units}
   * most of the time, otherwise shorter by up to {@code units - 1} so the interval is rounded up.
   */
  private static long periodFor(long t, long units, long pick) {
    long exact = t * units; // callers keep t·units within a long
    if (pick < 6 || units == 1) {
      return exact;
    }
    long slack = pick == 9 ? units - 1 : Math.floorMod(exact * 31 + pick, units);
    return exact - slack;
  }

  /** Nanoseconds per unit of refill. */
  private static Arbitrary<Long> intervals(boolean hugeOnly) {
    if (hugeOnly) {
      return Arbitraries.frequencyOf(
          Tuple.of(3, Arbitraries.of(1L, 2L, 3L, MAX_SPAN, MAX_SPAN - 1, MAX_SPAN / 2 + 1, MAX_SPAN / 3)),
          Tuple.of(3, Arbitraries.longs().between(1, MAX_SPAN).withDistribution(RandomDistribution.biased())),
          Tuple.of(2, Arbitraries.longs().between(1_000_000_000_000L, MAX_SPAN)));
    }
    return Arbitraries.frequencyOf(
        Tuple.of(20, Arbitraries.longs().between(1, 100)),
        Tuple.of(30, Arbitraries.longs().between(100, 1_000_000_000L)),
        Tuple.of(15, Arbitraries.of(1_000L, 1_000_000L, SECOND, 60 * SECOND, HOUR, 333_333_334L)),
        Tuple.of(10, Arbitraries.longs().between(1_000_000_000L, 1_000_000_000_000L)),
        Tuple.of(5, Arbitraries.longs().between(1, MAX_SPAN)),
        Tuple.of(3, Arbitraries.of(1L, MAX_SPAN)));
  }

  /** A count of units in {@code [1, max]}: mostly small, sometimes {@code max} or near it. */
  private static Arbitrary<Long> units(long max, boolean hugeOnly) {
    Arbitrary<Long> small = Arbitraries.longs().between(1, Math.min(max, 20));
    Arbitrary<Long> any = Arbitraries.longs().between(1, max);
    Arbitrary<Long> top = Arbitraries.longs().between(Math.max(1, max - 3), max);
    if (hugeOnly) {
      return Arbitraries.frequencyOf(Tuple.of(2, small), Tuple.of(4, any), Tuple.of(4, top));
    }
    return Arbitraries.frequencyOf(
        Tuple.of(60, small),
        Tuple.of(20, Arbitraries.longs().between(1, Math.min(max, 1_000_000))),
        Tuple.of(10, any),
        Tuple.of(5, top));
  }

  /** Window lengths in nanoseconds, from 1 ns to {@link Limit#MAX_SPAN_NANOS}. */
  private static Arbitrary<Long> windows(boolean hugeOnly) {
    if (hugeOnly) {
      return Arbitraries.frequencyOf(
          Tuple.of(1, Arbitraries.of(1L, 2L, MAX_SPAN, MAX_SPAN - 1)),
          Tuple.of(3, Arbitraries.longs().between(1_000_000_000_000L, MAX_SPAN)));
    }
    return Arbitraries.frequencyOf(
        Tuple.of(15, Arbitraries.longs().between(1, 1000)),
        Tuple.of(30, Arbitraries.longs().between(1000, 10_000_000_000L)),
        Tuple.of(20, Arbitraries.of(SECOND, 60 * SECOND, HOUR, DAY, 7 * DAY, 1_500_000_001L)),
        Tuple.of(5, Arbitraries.longs().between(10_000_000_000L, MAX_SPAN)),
        Tuple.of(2, Arbitraries.of(1L, MAX_SPAN)));
  }

  /** Window limits and allowances, up to {@link Long#MAX_VALUE}. */
  private static Arbitrary<Long> counts(boolean hugeOnly) {
    if (hugeOnly) {
      return Arbitraries.frequencyOf(
          Tuple.of(2, Arbitraries.longs().between(1, Long.MAX_VALUE)),
          Tuple.of(2, Arbitraries.longs().between(Long.MAX_VALUE - 3, Long.MAX_VALUE)),
          Tuple.of(1, Arbitraries.longs().between(1, 3)));
    }
    return Arbitraries.frequencyOf(
        Tuple.of(70, Arbitraries.longs().between(1, 20)),
        Tuple.of(15, Arbitraries.longs().between(1, 1_000_000)),
        Tuple.of(5, Arbitraries.longs().between(1, Long.MAX_VALUE)),
        Tuple.of(3, Arbitraries.just(Long.MAX_VALUE)));
  }

  static Arbitrary<Limit> fixedWindows(boolean hugeOnly) {
    return Combinators.combine(counts(hugeOnly), windows(hugeOnly))
        .as((limit, w) -> Limit.fixedWindow(limit, Duration.ofNanos(w)));
  }

  static Arbitrary<Limit> slidingWindows(boolean hugeOnly) {
    return Combinators.combine(counts(hugeOnly), windows(hugeOnly))
        .as((limit, w) -> Limit.slidingWindow(limit, Duration.ofNanos(w)));
  }

  /** Zones with unusual days: DST at midnight, half-hour shifts, skipped days, historic overlaps. */
  static final List<String> TRICKY_ZONES = List.of(
      "UTC", "Europe/Paris", "America/New_York", "America/St_Johns", "America/Moncton",
      "America/Goose_Bay", "America/Sao_Paulo", "America/Havana", "America/Santiago",
      "America/Asuncion", "Asia/Gaza", "Asia/Beirut", "Asia/Tehran", "Australia/Lord_Howe",
      "Pacific/Apia", "Pacific/Kiritimati", "Pacific/Chatham", "Antarctica/Troll",
      "Antarctica/Casey", "Africa/Casablanca", "Asia/Kathmandu", "Europe/Dublin");

  private static final List<String> ALL_ZONES = List.copyOf(new TreeSet<>(ZoneId.getAvailableZoneIds()));

  /**
   * Zones whose local date has gone backwards since 1970: clocks turned back across midnight, so
   * an hour of the previous date came round again after the new one had begun.
   */
  static final List<String> DATE_GOES_BACK = ALL_ZONES.stream().filter(id -> {
    ZoneId z = ZoneId.of(id);
    for (ZoneOffsetTransition t = z.getRules().nextTransition(Instant.EPOCH); t != null;
        t = z.getRules().nextTransition(t.getInstant())) {
      if (t.getDateTimeAfter().toLocalDate().isBefore(t.getDateTimeBefore().minusNanos(1).toLocalDate())) {
        return true;
      }
      if (t.getInstant().getEpochSecond() > 4_000_000_000L) {
        return false;
      }
    }
    return false;
  }).collect(Collectors.toUnmodifiableList());

  static Arbitrary<ZoneId> zones() {
    return Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.of(TRICKY_ZONES)),
        Tuple.of(2, Arbitraries.of(DATE_GOES_BACK)),
        Tuple.of(2, Arbitraries.of(ALL_ZONES))).map(ZoneId::of);
  }

  static Arbitrary<Limit> quotas(boolean hugeOnly) {
    return Combinators.combine(counts(hugeOnly), Arbitraries.of(Limit.Period.class), zones())
        .as(Limit::quota);
  }

  /** Any limit of any kind. */
  static Arbitrary<Limit> anyLimit(boolean hugeOnly) {
    return Arbitraries.frequencyOf(
        Tuple.of(3, buckets(hugeOnly)),
        Tuple.of(2, fixedWindows(hugeOnly)),
        Tuple.of(2, slidingWindows(hugeOnly)),
        Tuple.of(2, quotas(hugeOnly)));
  }

  // ---------------------------------------------------------------------------------------------
  // Timelines

  /** Timelines of 50 to 300 steps over one limit. */
  static Arbitrary<Timeline> timelines(Arbitrary<Limit> limits, Extra extra) {
    return limits.flatMap(l -> timelines(List.of(l), l, extra));
  }

  /**
   * Timelines of 50 to 300 steps over two limits, one of {@code first} and one of
   * {@code second} in either order, at the time scale of one of them.
   */
  static Arbitrary<Timeline> pairs(Arbitrary<Limit> first, Arbitrary<Limit> second, Extra extra) {
    return Combinators.combine(first, second, Arbitraries.of(0, 1), Arbitraries.of(0, 1))
        .flatAs((a, b, swap, pace) -> {
          List<Limit> limits = swap == 0 ? List.of(a, b) : List.of(b, a);
          return timelines(limits, limits.get(pace), extra);
        });
  }

  private static Arbitrary<Timeline> timelines(List<Limit> limits, Limit pace, Extra extra) {
    long full = full(pace);
    long scale = scale(pace);
    boolean quota = limits.stream().anyMatch(l -> l.kind() == Limit.Kind.QUOTA);
    long cap = limits.stream().mapToLong(Limit::limit).max().orElseThrow();
    Arbitrary<Long> permits = limits.size() == 1
        ? permits(cap)
        : Arbitraries.oneOf(permits(limits.get(0).limit()), permits(limits.get(1).limit()));
    Arbitrary<Step> step = Combinators.combine(moves(scale, full), ops(quota, extra), permits)
        .as((m, op, n) -> new Step(m.move(), m.amount(), op, n));
    Arbitrary<List<Step>> steps = step.list().ofMinSize(50).ofMaxSize(300)
        .withSizeDistribution(RandomDistribution.uniform());
    return Combinators.combine(starts(pace, full), steps).as((s, st) -> new Timeline(limits, s, st));
  }

  /** The span over which a limit's state matters: a full refill, a window, a period. */
  static long full(Limit l) {
    switch (l.kind()) {
      case FIXED_WINDOW:
      case SLIDING_WINDOW:
        return l.intervalNanos();
      case QUOTA:
        return l.period() == Limit.Period.DAY ? DAY : 31 * DAY;
      default:
        return l.limit() * l.intervalNanos(); // at most 2^61, checked when the limit was made
    }
  }

  /** A typical gap: a unit's refill, or a window or period shared among its units. */
  static long scale(Limit l) {
    switch (l.kind()) {
      case FIXED_WINDOW:
      case SLIDING_WINDOW:
        return Math.max(1, full(l) / Math.min(l.limit(), 500));
      case QUOTA:
        return Math.min(full(l) / Math.min(l.limit(), 500), HOUR / 2);
      default:
        return l.intervalNanos();
    }
  }

  private record MoveBy(Move move, long amount) {}

  private static Arbitrary<MoveBy> moves(long scale, long full) {
    Arbitrary<Long> nearby = Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.of(-1L, 0L, 1L)),
        Tuple.of(1, Arbitraries.longs().between(-Math.min(scale, 1L << 40), Math.min(scale, 1L << 40))));
    return Arbitraries.frequencyOf(
        Tuple.of(10, Arbitraries.just(new MoveBy(Move.BY, 0))),
        Tuple.of(30, Arbitraries.longs().between(1, scale).map(g -> new MoveBy(Move.BY, g))),
        Tuple.of(8, Arbitraries.longs().between(1, Math.max(1, full)).map(g -> new MoveBy(Move.BY, g))),
        Tuple.of(5, Combinators.combine(Arbitraries.longs().between(1, 3), Arbitraries.longs().between(-1, 1))
            .as((k, d) -> new MoveBy(Move.BY, saturatedTimes(k, full) + d))),
        Tuple.of(1, Arbitraries.longs().between(1, MAX_SPAN).map(g -> new MoveBy(Move.BY, g))),
        Tuple.of(10, nearby.map(d -> new MoveBy(Move.TO_BOUNDARY, d))),
        Tuple.of(12, Arbitraries.of(-1L, 0L, 0L, 1L).map(d -> new MoveBy(Move.TO_RETRY, d))),
        Tuple.of(4, Arbitraries.of(-1L, 0L, 1L).map(d -> new MoveBy(Move.TO_RESET, d))));
  }

  private static Arbitrary<LimiterOperation> ops(boolean quota, Extra extra) {
    List<Tuple.Tuple2<Integer, LimiterOperation>> ops = new ArrayList<>(List.of(
        Tuple.of(80, LimiterOperation.ACQUIRE),
        Tuple.of(7, LimiterOperation.PEEK),
        Tuple.of(8, LimiterOperation.REFUND)));
    if (quota) {
      ops.add(Tuple.of(5, LimiterOperation.TOP_UP));
    }
    if (extra == Extra.RESET) {
      ops.add(Tuple.of(1, LimiterOperation.RESET));
    }
    return Arbitraries.frequency(ops);
  }

  /** Permits for a limit of {@code cap}: 0, 1, a few, up to the limit, just over, far over. */
  static Arbitrary<Long> permits(long cap) {
    long over = cap == Long.MAX_VALUE ? cap : cap + 1;
    return Arbitraries.frequencyOf(
        Tuple.of(5, Arbitraries.just(0L)),
        Tuple.of(30, Arbitraries.just(1L)),
        Tuple.of(20, Arbitraries.longs().between(1, Math.min(cap, 10))),
        Tuple.of(15, Arbitraries.longs().between(1, cap)),
        Tuple.of(5, Arbitraries.just(cap)),
        Tuple.of(5, Arbitraries.just(over)),
        Tuple.of(3, Arbitraries.longs().between(over, Long.MAX_VALUE)),
        Tuple.of(3, Arbitraries.longs().between(Long.MAX_VALUE - 16, Long.MAX_VALUE)));
  }

  /** Start instants: near zero, the present, anywhere, the end of the range, or a zone change. */
  private static Arbitrary<Long> starts(Limit pace, long full) {
    long reach = Math.min(saturatedTimes(4, full), 1L << 61);
    List<Tuple.Tuple2<Integer, Arbitrary<Long>>> starts = new ArrayList<>(List.of(
        Tuple.of(15, Arbitraries.longs().between(0, reach)),
        Tuple.of(40, Arbitraries.longs().between(PRESENT_FROM, PRESENT_TO)),
        Tuple.of(10, Arbitraries.longs().between(TIME_MIN, TIME_MAX)),
        Tuple.of(5, Arbitraries.longs().between(TIME_MAX - reach, TIME_MAX))));
    if (pace.kind() == Limit.Kind.QUOTA) {
      // Shortly before one of the zone's offset changes, often one near local midnight.
      Arbitrary<Long> before = Arbitraries.frequencyOf(
          Tuple.of(3, Arbitraries.longs().between(0, 6 * HOUR)),
          Tuple.of(1, Arbitraries.longs().between(0, 2 * DAY)));
      Transitions tr = transitions(pace.zone());
      if (!tr.all().isEmpty()) {
        starts.add(Tuple.of(20, Combinators.combine(Arbitraries.of(tr.all()), before).as((at, b) -> at - b)));
      }
      if (!tr.nearMidnight().isEmpty()) {
        starts.add(Tuple.of(30, Combinators.combine(Arbitraries.of(tr.nearMidnight()), before).as((at, b) -> at - b)));
      }
    }
    return Arbitraries.frequencyOf(starts);
  }

  /** A zone's offset changes from 1970 to 2100, as epoch nanoseconds; and those near midnight. */
  record Transitions(List<Long> all, List<Long> nearMidnight) {}

  private static final Map<ZoneId, Transitions> TRANSITIONS = new ConcurrentHashMap<>();

  static Transitions transitions(ZoneId zone) {
    return TRANSITIONS.computeIfAbsent(zone, z -> {
      List<Long> all = new ArrayList<>();
      List<Long> nearMidnight = new ArrayList<>();
      Instant end = Instant.parse("2100-01-01T00:00:00Z");
      ZoneOffsetTransition t = z.getRules().nextTransition(Instant.EPOCH);
      while (t != null && t.getInstant().isBefore(end)) {
        long at = t.getInstant().getEpochSecond() * SECOND;
        all.add(at);
        LocalTime before = t.getDateTimeBefore().toLocalTime();
        LocalTime after = t.getDateTimeAfter().toLocalTime();
        if (!t.getDateTimeBefore().toLocalDate().equals(t.getDateTimeAfter().toLocalDate())
            || before.isBefore(LocalTime.of(3, 0)) || after.isBefore(LocalTime.of(3, 0))
            || before.isAfter(LocalTime.of(21, 0)) || after.isAfter(LocalTime.of(21, 0))) {
          nearMidnight.add(at);
        }
        t = z.getRules().nextTransition(t.getInstant());
      }
      return new Transitions(List.copyOf(all), List.copyOf(nearMidnight));
    });
  }

  static long saturatedTimes(long k, long n) {
    return Math.multiplyHigh(k, n) != 0 || k * n < 0 ? Long.MAX_VALUE : k * n;
  }

  /** {@code a + b} for {@code b >= 0}, but never past {@link #TIME_MAX}. */
  static long later(long a, long b) {
    return a > TIME_MAX - b ? TIME_MAX : a + b;
  }

  /** The next boundary strictly after {@code now} of a limit: window, period or refill unit. */
  static long nextBoundary(Limit l, long now) {
    if (l.kind() == Limit.Kind.QUOTA) {
      return ReferenceModels.Quota.nextStart(now, l.period(), l.zone());
    }
    long step = l.intervalNanos();
    return now - Math.floorMod(now, step) + step;
  }

  // ---------------------------------------------------------------------------------------------
  // Playing a timeline

  /** Plays calls on a machine, keeping the stored record between them as a store would. */
  static final class Driver {
    final LimiterMachine machine;
    final Limit pace;
    long[] record;
    long now;
    Decision last;

    Driver(List<Limit> limits, long start) {
      this.machine = new LimiterMachine("k", limits);
      this.pace = limits.get(0);
      this.now = start;
    }

    /** Moves the clock as {@code step} says; never backwards, never past {@link #TIME_MAX}. */
    long advance(Step step) {
      long gap;
      switch (step.move()) {
        case BY:
          gap = step.amount();
          break;
        case TO_BOUNDARY:
          gap = nextBoundary(pace, now) - now + step.amount();
          break;
        case TO_RETRY:
          gap = last != null && !last.allowed() && last.retryAfterNanos() != NEVER
              ? last.retryAfterNanos() + step.amount() : 0;
          break;
        case TO_RESET:
          gap = last == null ? 0 : last.resetAfterNanos() + step.amount();
          break;
        default:
          throw new AssertionError(step.move());
      }
      now = later(now, Math.max(0, gap));
      return now;
    }

    /** Runs a call at the current time and keeps the record it returns. */
    LimiterOutcome call(LimiterOperation op, long permits) {
      LimiterOutcome out = machine.apply(copy(record), now, op, permits);
      record = out.record();
      last = out.decision();
      return out;
    }

    /** Runs a call at {@code at} on a copy of the current record, changing nothing here. */
    LimiterOutcome probe(long at, LimiterOperation op, long permits) {
      return machine.apply(copy(record), at, op, permits);
    }
  }

  static long[] copy(long[] r) {
    return r == null ? null : r.clone();
  }

  static BigInteger big(long v) {
    return BigInteger.valueOf(v);
  }
}
