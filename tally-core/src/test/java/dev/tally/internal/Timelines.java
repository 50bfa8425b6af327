package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Quota;
import static dev.tally.internal.Gen.w;

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
  static Gen<Limit> buckets(boolean hugeOnly) {
    return Gen.oneOf(tokenBuckets(hugeOnly), leakyBuckets(hugeOnly), gcras(hugeOnly));
  }

  /** {@code Limit.tokenBucket(C, R, P)} (and the two-argument form) for a chosen interval. */
  static Gen<Limit> tokenBuckets(boolean hugeOnly) {
    return bucketsOf(hugeOnly, (t, c, r, pick) -> pick == 0 && c <= Long.MAX_VALUE / t
        ? Limit.tokenBucket(c, Duration.ofNanos(c * t))
        : Limit.tokenBucket(c, r, Duration.ofNanos(periodFor(t, r, pick))));
  }

  /** {@code Limit.leakyBucket(C, drainTime)}. */
  static Gen<Limit> leakyBuckets(boolean hugeOnly) {
    return bucketsOf(hugeOnly, (t, c, r, pick) -> Limit.leakyBucket(c, Duration.ofNanos(periodFor(t, c, pick))));
  }

  /** {@code Limit.gcra(maxBurst, count, period)}: capacity is {@code maxBurst + 1}. */
  static Gen<Limit> gcras(boolean hugeOnly) {
    return bucketsOf(hugeOnly, (t, c, count, pick) -> Limit.gcra(c - 1, count, Duration.ofNanos(periodFor(t, count, pick))));
  }

  /** Makes a bucket-shaped limit from its refill interval, capacity, units per period and a pick. */
  private interface BucketMaker {
    Limit make(long interval, long capacity, long units, long pick);
  }

  /** Bucket-shaped limits: an interval, then a capacity and units per period that fit it. */
  private static Gen<Limit> bucketsOf(boolean hugeOnly, BucketMaker maker) {
    return intervals(hugeOnly).flatMap(t -> {
      Gen<Long> capacities = units(MAX_SPAN / t, hugeOnly);
      Gen<Long> perPeriod = units(Long.MAX_VALUE / t, hugeOnly);
      Gen<Long> picks = Gen.longs(0, 9);
      return random -> maker.make(t, capacities.next(random), perPeriod.next(random), picks.next(random));
    });
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
  private static Gen<Long> intervals(boolean hugeOnly) {
    if (hugeOnly) {
      return Gen.frequencyOf(
          w(3, Gen.of(1L, 2L, 3L, MAX_SPAN, MAX_SPAN - 1, MAX_SPAN / 2 + 1, MAX_SPAN / 3)),
          w(3, Gen.biased(1, MAX_SPAN)),
          w(2, Gen.longs(1_000_000_000_000L, MAX_SPAN)));
    }
    return Gen.frequencyOf(
        w(20, Gen.longs(1, 100)),
        w(30, Gen.longs(100, 1_000_000_000L)),
        w(15, Gen.of(1_000L, 1_000_000L, SECOND, 60 * SECOND, HOUR, 333_333_334L)),
        w(10, Gen.longs(1_000_000_000L, 1_000_000_000_000L)),
        w(5, Gen.longs(1, MAX_SPAN)),
        w(3, Gen.of(1L, MAX_SPAN)));
  }

  /** A count of units in {@code [1, max]}: mostly small, sometimes {@code max} or near it. */
  private static Gen<Long> units(long max, boolean hugeOnly) {
    Gen<Long> small = Gen.longs(1, Math.min(max, 20));
    Gen<Long> any = Gen.longs(1, max);
    Gen<Long> top = Gen.longs(Math.max(1, max - 3), max);
    if (hugeOnly) {
      return Gen.frequencyOf(w(2, small), w(4, any), w(4, top));
    }
    return Gen.frequencyOf(
        w(60, small),
        w(20, Gen.longs(1, Math.min(max, 1_000_000))),
        w(10, any),
        w(5, top));
  }

  /** Window lengths in nanoseconds, from 1 ns to {@link Limit#MAX_SPAN_NANOS}. */
  private static Gen<Long> windows(boolean hugeOnly) {
    if (hugeOnly) {
      return Gen.frequencyOf(
          w(1, Gen.of(1L, 2L, MAX_SPAN, MAX_SPAN - 1)),
          w(3, Gen.longs(1_000_000_000_000L, MAX_SPAN)));
    }
    return Gen.frequencyOf(
        w(15, Gen.longs(1, 1000)),
        w(30, Gen.longs(1000, 10_000_000_000L)),
        w(20, Gen.of(SECOND, 60 * SECOND, HOUR, DAY, 7 * DAY, 1_500_000_001L)),
        w(5, Gen.longs(10_000_000_000L, MAX_SPAN)),
        w(2, Gen.of(1L, MAX_SPAN)));
  }

  /** Window limits and allowances, up to {@link Long#MAX_VALUE}. */
  private static Gen<Long> counts(boolean hugeOnly) {
    if (hugeOnly) {
      return Gen.frequencyOf(
          w(2, Gen.longs(1, Long.MAX_VALUE)),
          w(2, Gen.longs(Long.MAX_VALUE - 3, Long.MAX_VALUE)),
          w(1, Gen.longs(1, 3)));
    }
    return Gen.frequencyOf(
        w(70, Gen.longs(1, 20)),
        w(15, Gen.longs(1, 1_000_000)),
        w(5, Gen.longs(1, Long.MAX_VALUE)),
        w(3, Gen.just(Long.MAX_VALUE)));
  }

  static Gen<Limit> fixedWindows(boolean hugeOnly) {
    Gen<Long> counts = counts(hugeOnly);
    Gen<Long> windows = windows(hugeOnly);
    return random -> Limit.fixedWindow(counts.next(random), Duration.ofNanos(windows.next(random)));
  }

  static Gen<Limit> slidingWindows(boolean hugeOnly) {
    Gen<Long> counts = counts(hugeOnly);
    Gen<Long> windows = windows(hugeOnly);
    return random -> Limit.slidingWindow(counts.next(random), Duration.ofNanos(windows.next(random)));
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

  static Gen<ZoneId> zones() {
    return Gen.frequencyOf(
        w(3, Gen.of(TRICKY_ZONES)),
        w(2, Gen.of(DATE_GOES_BACK)),
        w(2, Gen.of(ALL_ZONES))).map(ZoneId::of);
  }

  static Gen<Limit> quotas(boolean hugeOnly) {
    Gen<Long> counts = counts(hugeOnly);
    Gen<Limit.Period> periods = Gen.of(Limit.Period.class);
    Gen<ZoneId> zones = zones();
    return random -> Limit.quota(counts.next(random), periods.next(random), zones.next(random));
  }

  /** Any limit of any kind. */
  static Gen<Limit> anyLimit(boolean hugeOnly) {
    return Gen.frequencyOf(
        w(3, buckets(hugeOnly)),
        w(2, fixedWindows(hugeOnly)),
        w(2, slidingWindows(hugeOnly)),
        w(2, quotas(hugeOnly)));
  }

  // ---------------------------------------------------------------------------------------------
  // Timelines

  /** Timelines of 50 to 300 steps over one limit. */
  static Gen<Timeline> timelines(Gen<Limit> limits, Extra extra) {
    return limits.flatMap(l -> timelines(List.of(l), l, extra));
  }

  /**
   * Timelines of 50 to 300 steps over two limits, one of {@code first} and one of
   * {@code second} in either order, at the time scale of one of them.
   */
  static Gen<Timeline> pairs(Gen<Limit> first, Gen<Limit> second, Extra extra) {
    return random -> {
      Limit a = first.next(random);
      Limit b = second.next(random);
      List<Limit> limits = random.nextBoolean() ? List.of(a, b) : List.of(b, a);
      return timelines(limits, limits.get(random.nextInt(2)), extra).next(random);
    };
  }

  private static Gen<Timeline> timelines(List<Limit> limits, Limit pace, Extra extra) {
    long full = full(pace);
    long scale = scale(pace);
    boolean quota = limits.stream().anyMatch(l -> l.kind() == Limit.Kind.QUOTA);
    long cap = limits.stream().mapToLong(Limit::limit).max().orElseThrow();
    Gen<Long> permits = limits.size() == 1
        ? permits(cap)
        : Gen.oneOf(permits(limits.get(0).limit()), permits(limits.get(1).limit()));
    Gen<MoveBy> moves = moves(scale, full);
    Gen<LimiterOperation> ops = ops(quota, extra);
    Gen<Step> step = random -> {
      MoveBy m = moves.next(random);
      return new Step(m.move(), m.amount(), ops.next(random), permits.next(random));
    };
    Gen<List<Step>> steps = step.list(50, 300);
    Gen<Long> starts = starts(pace, full);
    return random -> new Timeline(limits, starts.next(random), steps.next(random));
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

  private static Gen<MoveBy> moves(long scale, long full) {
    Gen<Long> nearby = Gen.frequencyOf(
        w(3, Gen.of(-1L, 0L, 1L)),
        w(1, Gen.longs(-Math.min(scale, 1L << 40), Math.min(scale, 1L << 40))));
    return Gen.frequencyOf(
        w(10, Gen.just(new MoveBy(Move.BY, 0))),
        w(30, Gen.longs(1, scale).map(gap -> new MoveBy(Move.BY, gap))),
        w(8, Gen.longs(1, Math.max(1, full)).map(gap -> new MoveBy(Move.BY, gap))),
        w(5, random -> new MoveBy(Move.BY, saturatedTimes(1 + random.nextInt(3), full) + random.nextInt(-1, 2))),
        w(1, Gen.longs(1, MAX_SPAN).map(gap -> new MoveBy(Move.BY, gap))),
        w(10, nearby.map(d -> new MoveBy(Move.TO_BOUNDARY, d))),
        w(12, Gen.of(-1L, 0L, 0L, 1L).map(d -> new MoveBy(Move.TO_RETRY, d))),
        w(4, Gen.of(-1L, 0L, 1L).map(d -> new MoveBy(Move.TO_RESET, d))));
  }

  private static Gen<LimiterOperation> ops(boolean quota, Extra extra) {
    List<Gen.Weighted<LimiterOperation>> ops = new ArrayList<>(List.of(
        w(80, Gen.just(LimiterOperation.ACQUIRE)),
        w(7, Gen.just(LimiterOperation.PEEK)),
        w(8, Gen.just(LimiterOperation.REFUND)),
        w(5, Gen.just(LimiterOperation.CHARGE))));
    if (quota) {
      ops.add(w(5, Gen.just(LimiterOperation.TOP_UP)));
    }
    if (extra == Extra.RESET) {
      ops.add(w(1, Gen.just(LimiterOperation.RESET)));
    }
    return Gen.frequencyOf(ops);
  }

  /** Permits for a limit of {@code cap}: 0, 1, a few, up to the limit, just over, far over. */
  static Gen<Long> permits(long cap) {
    long over = cap == Long.MAX_VALUE ? cap : cap + 1;
    return Gen.frequencyOf(
        w(5, Gen.just(0L)),
        w(30, Gen.just(1L)),
        w(20, Gen.longs(1, Math.min(cap, 10))),
        w(15, Gen.longs(1, cap)),
        w(5, Gen.just(cap)),
        w(5, Gen.just(over)),
        w(3, Gen.longs(over, Long.MAX_VALUE)),
        w(3, Gen.longs(Long.MAX_VALUE - 16, Long.MAX_VALUE)));
  }

  /** Start instants: near zero, the present, anywhere, the end of the range, or a zone change. */
  private static Gen<Long> starts(Limit pace, long full) {
    long reach = Math.min(saturatedTimes(4, full), 1L << 61);
    List<Gen.Weighted<Long>> starts = new ArrayList<>(List.of(
        w(15, Gen.longs(0, reach)),
        w(40, Gen.longs(PRESENT_FROM, PRESENT_TO)),
        w(10, Gen.longs(TIME_MIN, TIME_MAX)),
        w(5, Gen.longs(TIME_MAX - reach, TIME_MAX))));
    if (pace.kind() == Limit.Kind.QUOTA) {
      // Shortly before one of the zone's offset changes, often one near local midnight.
      Gen<Long> before = Gen.frequencyOf(
          w(3, Gen.longs(0, 6 * HOUR)),
          w(1, Gen.longs(0, 2 * DAY)));
      Transitions tr = transitions(pace.zone());
      if (!tr.all().isEmpty()) {
        Gen<Long> transition = Gen.of(tr.all());
        starts.add(w(20, random -> transition.next(random) - before.next(random)));
      }
      if (!tr.nearMidnight().isEmpty()) {
        Gen<Long> nearMidnight = Gen.of(tr.nearMidnight());
        starts.add(w(30, random -> nearMidnight.next(random) - before.next(random)));
      }
    }
    return Gen.frequencyOf(starts);
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
      this.machine = LimiterMachine.of("k", limits);
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
      LimiterOutcome out = machine.apply(words(copy(record)), now, op, permits);
      record = out.record();
      last = out.decision();
      return out;
    }

    /** Runs a call at {@code at} on a copy of the current record, changing nothing here. */
    LimiterOutcome probe(long at, LimiterOperation op, long permits) {
      return machine.apply(words(copy(record)), at, op, permits);
    }
  }

  static long[] copy(long[] r) {
    return r == null ? null : r.clone();
  }

  static BigInteger big(long v) {
    return BigInteger.valueOf(v);
  }

  /** Words as a record with no decision instant, as the machine's tests model state. */
  static dev.tally.spi.LimiterRecord words(long[] r) {
    return r == null ? null : new dev.tally.spi.LimiterRecord(Long.MIN_VALUE, r);
  }
}
