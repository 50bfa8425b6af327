package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * dynalite frozen (SIGSTOP) for {@link #FREEZE} under a store whose timeout is {@link #TIMEOUT},
 * with every kind of call the store makes in flight: a plain increment on the blocking and the
 * non-blocking client, an increment with an operation id (two requests, re-sent after a lost
 * answer), a limiter decision (re-sent, and waiting its turn behind another thread on the same
 * limiter) and a transaction (emulated, dynalite having none). Each call must end within the
 * timeout and {@link #SLACK}, failing with {@link StoreTimeoutException}, and each kind must
 * succeed again within {@link #RECOVERY} of the resume. The kit's server-fault case covers
 * increments and decisions in every configuration; this one adds the other paths and a freeze
 * five times the timeout, long enough for calls to time out back to back.
 */
class FrozenServerTest {
  static final Duration TIMEOUT = Duration.ofSeconds(2);
  static final Duration FREEZE = Duration.ofSeconds(10);
  static final Duration SLACK = Duration.ofSeconds(1);
  /**
   * Looser than the kit's 5 s: recovery is dynalite, one node process, working through what
   * queued during a freeze twice as long, and on a 2-core machine loaded by other builds that took
   * up to 5.6 s (for the emulated transaction, several requests in a row); on a quiet one, 0.5 s
   * to 1.8 s. A store that does not recover (a poisoned pool, a lock never released) fails either.
   */
  static final Duration RECOVERY = Duration.ofSeconds(8);
  private static final String TABLE = "tally-test-frozen";

  private static Tally open(String... options) {
    List<String> all = new ArrayList<>(List.of(options));
    all.add("timeout=" + TIMEOUT.toMillis());
    return Tally.open(Dynalite.tableUri(TABLE, "key", all.toArray(String[]::new)));
  }

  @Test
  void everyCallEndsWithinTheTimeoutWhileTheServerIsFrozenAndSucceedsSoonAfter() throws Exception {
    assumeTrue(Dynalite.freezable(), "dynalite was not started by the tests: nothing to freeze");
    String group = "frozen-" + UUID.randomUUID();
    try (Tally plain = open();
        Tally emulated = Tally.open(Dynalite.tableUri(TABLE, "key", "async=off", "timeout=" + TIMEOUT.toMillis())
            .replaceFirst("^dynamodb:", "dynamodb-txemu:"))) {
      Counters counters = plain.counters(group);
      Counters txCounters = emulated.counters(group);
      RateLimiter limiter = plain.limiter(group + ":limiter", Limit.tokenBucket(1_000_000, Duration.ofHours(1)));
      AtomicInteger ids = new AtomicInteger();
      List<Caller> callers = List.of(
          new Caller("incr", () -> counters.incr("plain")),
          new Caller("async incr", () -> counters.async().incr("async").toCompletableFuture().join()),
          new Caller("incr with an operation id",
              () -> counters.withOperationId(group + "-" + ids.incrementAndGet()).incr("once")),
          new Caller("limiter decision", () -> limiter.decide(1)),
          new Caller("limiter decision behind another", () -> limiter.decide(1)),
          new Caller("transaction", () -> txCounters.transaction(tx -> tx.incr("tx-a").incr("tx-b"))));

      callers.forEach(Thread::start);
      long resumedAt;
      try {
        Thread.sleep(500);
        Dynalite.freeze();
        try {
          Thread.sleep(FREEZE.toMillis());
        } finally {
          Dynalite.resume();
          resumedAt = System.nanoTime();
          callers.forEach(c -> c.resumedAt.set(resumedAt));
        }
        long until = resumedAt + RECOVERY.plusSeconds(5).toNanos(); // a recovery past RECOVERY is measured, then fails
        while (System.nanoTime() < until && !callers.stream().allMatch(Caller::recovered)) {
          Thread.sleep(20);
        }
      } finally {
        callers.forEach(Caller::halt);
        for (Caller c : callers) {
          c.join(TIMEOUT.plus(SLACK).toMillis() + 1_000);
        }
      }

      long longest = 0;
      long slowestRecovery = 0;
      for (Caller c : callers) {
        System.out.println("[frozen " + FREEZE.toSeconds() + " s, timeout " + TIMEOUT.toMillis() + " ms] " + c);
        longest = Math.max(longest, c.longestNanos);
        slowestRecovery = Math.max(slowestRecovery, c.recoveryNanos());
      }
      System.out.println("[frozen] longest call " + TimeUnit.NANOSECONDS.toMillis(longest) + " ms; every kind of"
          + " call succeeded again within " + TimeUnit.NANOSECONDS.toMillis(slowestRecovery) + " ms of the resume");
      for (Caller c : callers) {
        assertThat(c.isAlive()).as("%s hangs", c.getName()).isFalse();
        assertThat(c.unexpected).as("%s failed with something other than a store failure", c.getName()).isNull();
        assertThat(Duration.ofNanos(c.longestNanos)).as("the longest %s (%s)", c.getName(), c)
            .isLessThanOrEqualTo(TIMEOUT.plus(SLACK));
        assertThat(c.failures).as("how %s failed while the server was frozen", c.getName())
            .isNotEmpty()
            .allSatisfy((type, n) -> assertThat(type).isEqualTo(StoreTimeoutException.class.getSimpleName()));
        assertThat(c.recovered()).as("%s succeeds again within %s of the resume (%s)", c.getName(), RECOVERY, c)
            .isTrue();
        assertThat(Duration.ofNanos(c.recoveryNanos())).as("%s recovery", c.getName()).isLessThanOrEqualTo(RECOVERY);
      }
      Caller withId = callers.get(2);
      assertThat(withId.lastFailure).as("a timed-out call with an operation id says a retry with it is safe")
          .contains("retrying it with the same id applies it at most once");
      // Each id was used once: the count is between what was acknowledged and that plus the unknown.
      assertThat(counters.get("once").orElseThrow())
          .isBetween(withId.acknowledged, withId.acknowledged + withId.failed);
    }
  }

  @Test
  void aRefusedConnectionIsUnavailableAtOnceNotATimeout() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    String uri = "dynamodb://tally?endpoint=http://127.0.0.1:" + port + "&timeout=" + TIMEOUT.toMillis();
    assertThatThrownBy(() -> Tally.open(uri)).isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("could not reach DynamoDB").hasMessageContaining("nothing was applied");
    // The call alone is timed: building the SDK's clients, on opening, takes seconds on a cold JVM.
    Options options = Options.parse(uri);
    try (Clients clients = new Clients(options, List.of())) {
      long start = System.nanoTime();
      assertThatThrownBy(() -> Tables.awaitUsable(clients.counters, options))
          .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("Connection refused");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(TIMEOUT);
    }
  }

  /** One kind of call, made over and over: how long each took, how they failed, when they recovered. */
  private static final class Caller extends Thread {
    interface Call {
      void run();
    }

    private final Call call;
    private final AtomicBoolean stop = new AtomicBoolean();
    final AtomicLong resumedAt = new AtomicLong(Long.MAX_VALUE);
    /** Failures by exception type. */
    final Map<String, Integer> failures = new ConcurrentHashMap<>();
    // written by this thread alone, read after join(), which orders them
    long acknowledged;
    long failed;
    long longestNanos;
    String lastFailure = "";
    volatile long firstSuccessAfterResume = Long.MAX_VALUE;
    volatile Throwable unexpected;

    Caller(String name, Call call) {
      super(name);
      setDaemon(true);
      this.call = call;
    }

    boolean recovered() {
      return firstSuccessAfterResume != Long.MAX_VALUE;
    }

    long recoveryNanos() {
      return recovered() ? firstSuccessAfterResume - resumedAt.get() : Long.MAX_VALUE;
    }

    void halt() {
      stop.set(true);
    }

    @Override
    public void run() {
      while (!stop.get()) {
        long started = System.nanoTime();
        try {
          call.run();
          acknowledged++;
          long now = System.nanoTime();
          // a call that began before the resume may succeed after it; recovery counts those too
          if (now >= resumedAt.get() && !recovered()) {
            firstSuccessAfterResume = now;
          }
        } catch (StoreException | CompletionException e) {
          Throwable f = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          if (!(f instanceof StoreException)) {
            unexpected = f;
            return;
          }
          failed++;
          failures.merge(f.getClass().getSimpleName(), 1, Integer::sum);
          lastFailure = String.valueOf(f.getMessage());
        } catch (Throwable t) {
          unexpected = t;
          return;
        } finally {
          longestNanos = Math.max(longestNanos, System.nanoTime() - started);
        }
        if (failed > 0 && !recovered()) {
          try {
            Thread.sleep(10); // a client's pace while the server is away
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }

    @Override
    public String toString() {
      return getName() + ": " + acknowledged + " acknowledged, " + failed + " failed " + failures
          + ", longest call " + TimeUnit.NANOSECONDS.toMillis(longestNanos) + " ms, first success "
          + (recovered() ? TimeUnit.NANOSECONDS.toMillis(recoveryNanos()) + " ms after the resume" : "never after the resume");
    }
  }
}
