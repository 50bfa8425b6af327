package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.tck.ManualTimeSource;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Redis killed for 5 s under load while threads take permits through a leased limiter on one hot
 * key. The lease keeps granting from the stock the store had already granted, stops when that is
 * spent, and then the failure policy answers: fail-closed denies, fail-open allows without the
 * store, by design, and marks each such answer ({@link Decision#storeFailed()}). Either way
 * nothing beyond the stock is granted from it; once Redis is back, grants resume.
 *
 * <p>Redis is killed (SIGKILL) rather than frozen: a stopped store is one that refuses
 * connections, and every refill then fails at once, so the outage is the stock's length and not a
 * queue of timeouts. ({@link OutageTest} covers the frozen server for plain calls.)
 *
 * <p>The lease reads the Tally's clock, a manual one held still through the outage: its blocks
 * cannot reach their lease end, so the stock leaves only by being granted and the test can account
 * for every permit. Stock is read with {@link LeasedRateLimiter#stock()}, and what the store
 * leased is summed from {@link TallyListener#onLeaseRefill} (the events behind
 * {@code tally.lease.permits}), so the test observes the lease only through its public surface.
 */
class LeaseOutageTest {
  private static final int THREADS = 4;
  private static final long MAX_BLOCK = 2_000;
  private static final long OUTAGE_MILLIS = 5_000;
  /** Wall-clock waits are bounded with wide slack: the machine is shared and may be loaded. */
  private static final long WAIT_MILLIS = 10_000;

  private RedisServer server;
  private Tally tally;
  private final ManualTimeSource clock = new ManualTimeSource();
  private final AtomicLong leased = new AtomicLong();
  private final AtomicLong failedRefills = new AtomicLong();

  @BeforeEach
  void open() {
    server = RedisServer.start();
    TallyListener listener = new TallyListener() {
      @Override
      public void onLeaseRefill(String key, long requested, long granted) {
        leased.addAndGet(granted);
      }

      @Override
      public void onLeaseRefillFailed(String key, StoreException cause) {
        failedRefills.incrementAndGet();
      }
    };
    // The calls' timeout is short, so that the outage is seen at once; it bounds the connection
    // attempt too, which a fresh server on a loaded machine can outlast: a few attempts, then fail.
    for (int attempt = 1; tally == null; attempt++) {
      try {
        tally = Tally.builder(server.uri() + "?timeout=500ms").timeSource(clock).listener(listener).build();
      } catch (StoreException e) {
        if (attempt == 5) {
          throw e;
        }
      }
    }
  }

  @AfterEach
  void close() {
    if (tally != null) {
      tally.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /** What one call observed, by the phase it started in. */
  private static final class Phase {
    /** Granted by the store or from the stock: not a failure policy's answer. */
    final LongAdder granted = new LongAdder();
    final LongAdder policyAnswers = new LongAdder();
    final LongAdder otherDenials = new LongAdder();
  }

  @Test
  void grantsContinueFromTheStockThenTheFailurePolicyAnswersAndNothingBeyondTheStockIsGranted()
      throws Exception {
    outage(FailurePolicy.FAIL_CLOSED);
  }

  @Test
  void failOpenAllowsOnceTheStockIsSpentMarkingEachAnswerAndTheStockGrantsNothingBeyondItself()
      throws Exception {
    outage(FailurePolicy.FAIL_OPEN);
  }

  /**
   * Kills Redis under load and checks the outage: grants from the stock, at most the stock; once
   * it is spent only {@code policy}'s answers (allowed for fail-open, denied for fail-closed,
   * each marked {@link Decision#storeFailed()}); grants again after the restart.
   */
  private void outage(FailurePolicy policy) throws Exception {
    boolean allows = policy == FailurePolicy.FAIL_OPEN;
    // A bucket the load cannot empty: every denial in this test is the outage's.
    Limit limit = Limit.tokenBucket(100_000_000, Duration.ofHours(1));
    LeasedRateLimiter lease = tally.limiter("hot", limit).withFailurePolicy(policy)
        .leased(MAX_BLOCK, Duration.ofSeconds(10));
    Phase before = new Phase();
    Phase outage = new Phase();
    Phase spent = new Phase(); // calls started after the first failure-policy answer, before the restart
    Phase after = new Phase();
    AtomicReference<Phase> phase = new AtomicReference<>(before);
    AtomicReference<String> unexpected = new AtomicReference<>();
    AtomicLong firstPolicyAnswerAt = new AtomicLong();
    Thread[] workers = new Thread[THREADS];
    for (int t = 0; t < THREADS; t++) {
      workers[t] = new Thread(() -> {
        while (phase.get() != null) {
          Phase p = phase.get(); // read before the call: the call started in this phase
          if (p == null) {
            break;
          }
          try {
            Decision d = lease.decide(1);
            if (d.storeFailed()) {
              if (d.allowed() != allows) {
                unexpected.compareAndSet(null, policy + " answered " + d);
              }
              p.policyAnswers.increment();
              firstPolicyAnswerAt.compareAndSet(0, System.nanoTime());
            } else if (d.allowed()) {
              p.granted.increment();
            } else {
              p.otherDenials.increment();
            }
          } catch (RuntimeException e) {
            unexpected.compareAndSet(null, e.toString());
          }
          // Paced, so the stock lasts a visible while into the outage and failed calls do not spin.
          RedisServer.sleep(1);
        }
      }, "lease-outage-" + t);
      workers[t].start();
    }

    awaitAtLeast(before.granted, 3 * MAX_BLOCK, "grants before the outage");
    long stockBefore = lease.stock();
    // Read before the kill: a block the store leased after this was in flight when Redis died,
    // and is counted with the outage's (killing takes milliseconds, far longer than a landing
    // block takes from its refill event to the stock).
    long leasedAtStart = leased.get();
    server.kill();
    long killedAt = System.nanoTime();
    // The outage starts here: a call that starts from now on finds at most this stock, plus a
    // block whose reply was already on its way when Redis died.
    long stockAtStart = lease.stock();
    phase.set(outage);

    awaitAtLeast(outage.policyAnswers, 1, "a failure-policy answer once the stock is spent");
    phase.set(spent);
    long spentAfterMillis = TimeUnit.NANOSECONDS.toMillis(firstPolicyAnswerAt.get() - killedAt);
    assertThat(lease.stock()).as("stock once the failure policy answers").isZero();
    long rest = OUTAGE_MILLIS - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
    RedisServer.sleep(Math.max(0, rest));
    long leasedInOutage = leased.get() - leasedAtStart;

    phase.set(after);
    server.restart();
    awaitAtLeast(after.granted, 1, "a grant after Redis is back");
    phase.set(null);
    for (Thread w : workers) {
      w.join(WAIT_MILLIS);
      if (w.isAlive()) {
        fail("a worker is still running: a call hangs");
      }
    }

    String seen = String.format("stock %d before the kill, %d at the outage's start (+%d leased in flight);"
            + " outage: %d granted, then the policy after %d ms; after the policy %d granted, %d policy answers;"
            + " %d failed refills; after restart %d granted",
        stockBefore, stockAtStart, leasedInOutage, outage.granted.sum(), spentAfterMillis, spent.granted.sum(),
        spent.policyAnswers.sum(), failedRefills.get(), after.granted.sum());
    System.out.println("LeaseOutageTest, " + policy + ": " + seen);
    assertThat(unexpected.get()).as(seen).isNull();
    assertThat(stockAtStart).as("stock when Redis died: %s", seen).isPositive();
    assertThat(outage.granted.sum()).as("grants from the stock during the outage: %s", seen)
        .isPositive()
        .isLessThanOrEqualTo(stockAtStart + leasedInOutage);
    assertThat(leasedInOutage).as("leased after the kill: only a reply already sent, one block at most")
        .isLessThanOrEqualTo(MAX_BLOCK);
    assertThat(spent.granted.sum()).as("grants once the stock was spent and before the restart: %s", seen)
        .isZero();
    assertThat(spent.policyAnswers.sum()).as(seen).isPositive();
    assertThat(outage.otherDenials.sum() + spent.otherDenials.sum()).as("denials not by the policy: %s", seen)
        .isZero();
    assertThat(failedRefills.get()).isPositive();
    // Every permit granted through the outage was one the store leased to this process.
    assertThat(before.granted.sum() + outage.granted.sum() + spent.granted.sum()).as(seen)
        .isLessThanOrEqualTo(leasedAtStart + leasedInOutage);
  }

  /** Waits until {@code n} reaches {@code atLeast}, failing after a generous bound. */
  private static void awaitAtLeast(LongAdder n, long atLeast, String what) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MILLIS);
    while (n.sum() < atLeast) {
      if (System.nanoTime() - deadline > 0) {
        fail("no %s within %d ms (%d seen)", what, WAIT_MILLIS, n.sum());
      }
      RedisServer.sleep(5);
    }
  }
}
