package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Quota;
import static dev.tally.internal.Timelines.big;

import dev.tally.internal.Timelines.Driver;
import dev.tally.internal.Timelines.Extra;
import dev.tally.internal.Timelines.Step;
import dev.tally.internal.Timelines.Timeline;
import dev.tally.spi.LimiterOperation;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Whatever the interleaving, no limit grants more than its algorithm's bound, counting every
 * unit refunded (or topped up) as one more that may be granted again:
 *
 * <ul>
 *   <li>token bucket, leaky bucket, GCRA: at most {@code C + floor((b - a) / T)} in any
 *       interval {@code [a, b]} of the timeline ({@code C} is GCRA's burst + 1);
 *   <li>fixed window: at most the limit in each aligned window;
 *   <li>sliding window: at most the limit in each aligned window, and twice the limit in any
 *       span of one window's length;
 *   <li>quota: at most the allowance plus this period's top-ups in each calendar period.
 * </ul>
 */
class LimiterBoundProperties {

  /** What happened at one instant: units granted, and units given back or added. */
  private record Event(long at, long granted, long returned) {}

  private static List<Event> play(Timeline t) {
    Driver d = new Driver(t.limits(), t.start());
    List<Event> events = new ArrayList<>();
    long grants = 0;
    for (Step s : t.steps()) {
      long now = d.advance(s);
      Decision dec = d.call(s.op(), s.permits()).decision();
      long granted = s.op() == LimiterOperation.ACQUIRE && dec.allowed() ? s.permits() : 0;
      long returned = s.op() == LimiterOperation.REFUND || s.op() == LimiterOperation.TOP_UP ? s.permits() : 0;
      events.add(new Event(now, granted, returned));
      grants += granted > 0 ? 1 : 0;
    }
    long tens = grants * 10 / t.steps().size() * 10;
    Property.collect("calls granted", tens + "-" + (tens + 9) + "%");
    return events;
  }

  /** Prefix sums of granted and returned units: {@code sums[i]} covers events before {@code i}. */
  private static BigInteger[][] prefixSums(List<Event> events) {
    BigInteger[][] sums = new BigInteger[2][events.size() + 1];
    sums[0][0] = BigInteger.ZERO;
    sums[1][0] = BigInteger.ZERO;
    for (int i = 0; i < events.size(); i++) {
      sums[0][i + 1] = sums[0][i].add(big(events.get(i).granted()));
      sums[1][i + 1] = sums[1][i].add(big(events.get(i).returned()));
    }
    return sums;
  }

  @Test
  void bucketsGrantAtMostTheBurstPlusTheRefill() {
    Property.forAll(4000, buckets(), t -> {
      Limit limit = t.limits().get(0);
      List<Event> events = play(t);
      BigInteger[][] sums = prefixSums(events);
      BigInteger capacity = big(limit.limit());
      BigInteger interval = big(limit.intervalNanos());
      int n = events.size();
      // Every interval [a, b] whose ends are instants of the timeline, with all calls at a and b.
      for (int i = 0; i < n; i++) {
        if (i > 0 && events.get(i - 1).at() == events.get(i).at()) {
          continue; // not the first call at this instant
        }
        long a = events.get(i).at();
        for (int j = i; j < n; j++) {
          if (j + 1 < n && events.get(j + 1).at() == events.get(j).at()) {
            continue; // not the last call at this instant
          }
          long b = events.get(j).at();
          BigInteger granted = sums[0][j + 1].subtract(sums[0][i]);
          BigInteger bound = capacity.add(big(b).subtract(big(a)).divide(interval))
              .add(sums[1][j + 1].subtract(sums[1][i]));
          if (granted.compareTo(bound) > 0) {
            throw new AssertionError(limit + " granted " + granted + " in [" + a + ", " + b + "], bound " + bound);
          }
        }
      }
    });
  }

  @Test
  void fixedWindowGrantsAtMostTheLimitPerWindow() {
    Property.forAll(4000, fixedWindows(), t -> {
      Limit limit = t.limits().get(0);
      perPeriod(limit, play(t), e -> Math.floorDiv(e.at(), limit.intervalNanos()));
    });
  }

  @Test
  void slidingWindowGrantsAtMostTheLimitPerWindowAndTwiceInAnySpan() {
    Property.forAll(4000, slidingWindows(), t -> {
      Limit limit = t.limits().get(0);
      long w = limit.intervalNanos();
      List<Event> events = play(t);
      perPeriod(limit, events, e -> Math.floorDiv(e.at(), w));
      // Any span [a, a + W) meets at most two aligned windows: 2 * limit plus what their refunds gave back.
      Map<Long, BigInteger> returnedPerWindow = new HashMap<>();
      for (Event e : events) {
        returnedPerWindow.merge(Math.floorDiv(e.at(), w), big(e.returned()), BigInteger::add);
      }
      BigInteger twice = big(limit.limit()).shiftLeft(1);
      for (int i = 0; i < events.size(); i++) {
        long a = events.get(i).at();
        if (i > 0 && events.get(i - 1).at() == a) {
          continue;
        }
        BigInteger granted = BigInteger.ZERO;
        for (int j = i; j < events.size() && events.get(j).at() - a < w; j++) {
          granted = granted.add(big(events.get(j).granted()));
        }
        long first = Math.floorDiv(a, w);
        BigInteger bound = twice.add(returnedPerWindow.getOrDefault(first, BigInteger.ZERO))
            .add(returnedPerWindow.getOrDefault(first + 1, BigInteger.ZERO));
        if (granted.compareTo(bound) > 0) {
          throw new AssertionError(limit + " granted " + granted + " in a window's span from " + a + ", bound " + bound);
        }
      }
    });
  }

  @Test
  void quotaGrantsAtMostTheAllowancePlusTopUpsPerPeriod() {
    Property.forAll(4000, quotas(), t -> {
      Limit limit = t.limits().get(0);
      perPeriod(limit, play(t), e -> ReferenceModels.Quota.periodOf(e.at(), limit.period(), limit.zone()));
    });
  }

  /** Within each period (window, calendar period), granted ≤ limit + returned. */
  private static <K> void perPeriod(Limit limit, List<Event> events, Function<Event, K> period) {
    Map<K, BigInteger> granted = new HashMap<>();
    Map<K, BigInteger> returned = new HashMap<>();
    for (Event e : events) {
      K k = period.apply(e);
      granted.merge(k, big(e.granted()), BigInteger::add);
      returned.merge(k, big(e.returned()), BigInteger::add);
    }
    for (Map.Entry<K, BigInteger> g : granted.entrySet()) {
      BigInteger bound = big(limit.limit()).add(returned.get(g.getKey()));
      if (g.getValue().compareTo(bound) > 0) {
        throw new AssertionError(limit + " granted " + g.getValue() + " in period " + g.getKey() + ", bound " + bound);
      }
    }
  }

  private static Gen<Timeline> buckets() {
    return Timelines.timelines(Timelines.buckets(false), Extra.NONE);
  }

  private static Gen<Timeline> fixedWindows() {
    return Timelines.timelines(Timelines.fixedWindows(false), Extra.NONE);
  }

  private static Gen<Timeline> slidingWindows() {
    return Timelines.timelines(Timelines.slidingWindows(false), Extra.NONE);
  }

  private static Gen<Timeline> quotas() {
    return Timelines.timelines(Timelines.quotas(false), Extra.NONE);
  }
}
