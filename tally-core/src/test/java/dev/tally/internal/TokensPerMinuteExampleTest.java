package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Reservation;
import dev.tally.Tally;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Store;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The example of docs/limiters.md ("Reservations"): calls to a language model limited to
 * {@value #BUDGET} tokens a minute for one user, whose cost is known only when each response ends.
 * One workload of overlapping requests, on a clock of the test's, admitted two ways:
 *
 * <ul>
 *   <li><b>reservations</b>: reserve the request's estimate (prompt plus the expected output) and
 *       settle at the real cost when the response ends;
 *   <li><b>charge after the fact</b>, the gateways' way: admit while the limiter has anything left
 *       (a peek), and charge the real cost when the response ends.
 * </ul>
 *
 * For each minute the test adds up the real tokens of the requests that minute let in, and
 * compares them with the budget. Reservations let in at most the budget in estimates, so a minute
 * overshoots only by its requests' costs beyond their estimates (here real costs are 0.5 to 1.5
 * times the estimate, so less than half a budget); charging after the fact lets in every request
 * that arrives before the first responses end, many budgets' worth.
 *
 * <p>The clock is the test's and the requests are events on it rather than threads: the
 * overshoot depends on how requests overlap in time, which a simulated timeline fixes exactly
 * (the figures are the same on every run), while the atomicity of reserve and settle under real
 * threads is the conformance kit's ({@code ReservationContract}, 32 threads, on every store).
 */
class TokensPerMinuteExampleTest {
  static final long BUDGET = 20_000;
  private static final long MINUTE = TimeUnit.MINUTES.toNanos(1);
  private static final long STEP = TimeUnit.MILLISECONDS.toNanos(100);
  private static final int MINUTES = 10;
  private static final long START = Instant.parse("2026-11-08T00:00:00Z").getEpochSecond() * 1_000_000_000L;

  /** One request: when it arrives and ends, what was estimated and what it really cost. */
  record Request(long arrives, long ends, long estimate, long actual) {}

  /** Five requests a second on average, each running 5 to 40 s. */
  static List<Request> workload(long seed) {
    Random rnd = new Random(seed);
    List<Request> requests = new ArrayList<>();
    for (long t = START; t < START + MINUTES * MINUTE; t += STEP) {
      if (rnd.nextInt(2) == 0) {
        long prompt = 500 + rnd.nextInt(1_001);
        long estimate = prompt + 1_000; // the expected output
        long actual = Math.round(estimate * (0.5 + rnd.nextDouble())); // 0.5 to 1.5 times the estimate
        long duration = TimeUnit.SECONDS.toNanos(5) + (long) (rnd.nextDouble() * TimeUnit.SECONDS.toNanos(35));
        requests.add(new Request(t, t + duration, estimate, actual));
      }
    }
    return requests;
  }

  /** How one strategy admits a request and settles it when it ends. */
  private interface Strategy {
    /** Whether the request is let in; {@code ended} is called when it ends, if so. */
    Runnable admit(Request r);
  }

  /** Real tokens let in per minute by {@code strategy} over {@code requests}. */
  private static long[] letIn(List<Request> requests, AtomicLong clock, Strategy strategy) {
    long[] perMinute = new long[MINUTES];
    List<Object[]> inFlight = new ArrayList<>(); // {Request, Runnable settle}
    int next = 0;
    for (long t = START; t < START + MINUTES * MINUTE + TimeUnit.SECONDS.toNanos(41); t += STEP) {
      clock.set(t);
      long now = t;
      inFlight.removeIf(f -> {
        if (((Request) f[0]).ends() <= now) {
          ((Runnable) f[1]).run();
          return true;
        }
        return false;
      });
      while (next < requests.size() && requests.get(next).arrives() <= now) {
        Request r = requests.get(next++);
        Runnable settle = strategy.admit(r);
        if (settle != null) {
          perMinute[(int) ((r.arrives() - START) / MINUTE)] += r.actual();
          inFlight.add(new Object[] {r, settle});
        }
      }
    }
    return perMinute;
  }

  private static long maxOvershoot(long[] perMinute) {
    long most = Long.MIN_VALUE;
    for (long tokens : perMinute) {
      most = Math.max(most, tokens - BUDGET);
    }
    return most;
  }

  @Test
  void reservationsKeepEachMinuteWithinOneBudgetOverWhileChargingAfterTheFactDoesNot() {
    List<Request> requests = workload(20261108);
    AtomicLong clock = new AtomicLong(START);
    try (Tally tally = Tally.builder("mem:").timeSource(clock::get).build()) {
      Limit perMinute = Limit.fixedWindow(BUDGET, Duration.ofMinutes(1));

      RateLimiter reserving = tally.limiter("llm:user:42:reserved", perMinute);
      long[] reserved = letIn(requests, clock, r -> {
        Reservation res = reserving.reserve(r.estimate(), Duration.ofMinutes(1));
        return res.granted() ? () -> res.settle(r.actual()) : null;
      });

      RateLimiter gateway = tally.limiter("llm:user:42:after-the-fact", perMinute);
      Store store = ((TallyRuntime) tally).store();
      LimiterMachine charging = new LimiterMachine(gateway.name(), List.of(perMinute), 0, Mismatches.NONE);
      long[] afterTheFact = letIn(requests, clock, r -> gateway.peek().allowed()
          ? () -> store.limit(charging, LimiterOperation.CHARGE, r.actual())
          : null);

      long reservedOver = maxOvershoot(reserved);
      long afterOver = maxOvershoot(afterTheFact);
      System.out.printf("tokens per minute, budget %d: with reservations at most %d over (per minute %s);"
          + " charged after the fact at most %d over (per minute %s)%n", BUDGET, reservedOver,
          java.util.Arrays.toString(reserved), afterOver, java.util.Arrays.toString(afterTheFact));

      assertThat(reservedOver).as("reservations: at most one budget over in any minute").isLessThanOrEqualTo(BUDGET);
      assertThat(afterOver).as("after the fact: several budgets over").isGreaterThan(3 * BUDGET);
      assertThat(java.util.Arrays.stream(reserved).min().orElseThrow()).as("reservations still spend the budget")
          .isGreaterThan(BUDGET / 2);
    }
  }
}
