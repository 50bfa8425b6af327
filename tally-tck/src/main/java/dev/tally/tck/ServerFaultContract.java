package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tally.ConcurrencyLimit;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The server frozen under load: what a hung host, a long stall or a network partition does to
 * a client whose sockets stay open and hear nothing. Threads increment one counter, decide on one
 * limiter, decide jointly across two others, and take and give back leases of one concurrency
 * limit, while the harness freezes the server ({@link ServerFreeze}) for longer than the call
 * timeout, then resumes it. The store passes if
 *
 * <ul>
 *   <li>every call ends within its timeout and {@link #SLACK}, answered or failed with a
 *       {@link dev.tally.StoreException}: none hangs; and one that failed after its whole timeout
 *       says why, a timeout or an unreachable server, never as a bare {@code StoreException};
 *   <li>every thread succeeds again within {@link #RECOVERY} of the resume;
 *   <li>nothing acknowledged is lost and nothing counted twice. A failed call's outcome is
 *       unknown ("may or may not have applied"), so each book is a range: the counter ends between
 *       the acknowledged increments and those plus the failed ones; each limiter has taken at
 *       least what it acknowledged granting and at most one more per failed decision; the two
 *       joint limiters differ by no more than the failed joint decisions (an acknowledged joint
 *       grant charged both); the concurrency limit holds at least the leases acknowledged and not
 *       given back, and at most one more per failed acquire or release; and fencing tokens rise
 *       (see {@link FaultWorkload#assertJointDecisionsAllOrNothing} and
 *       {@link FaultWorkload#assertLeasesKept} for why each bound is what it is).
 * </ul>
 *
 * A store without joint decisions or concurrency limits runs the case without those threads,
 * printing why.
 *
 * <p>Time here is the wall clock's by necessity: a timeout is a bound on real waiting. The kit's
 * manual clock still drives the limiters and leases, frozen, so no bucket refills, no lease
 * expires, and every grant and lease shows in the store's state.
 */
@Tag("server-faults")
public abstract class ServerFaultContract extends TallyFixture {
  /** How far past its timeout a call may end: the time to fail it and hand the failure back. */
  public static final Duration SLACK = Duration.ofSeconds(1);
  /** How soon after the server resumes every thread's calls succeed again. */
  public static final Duration RECOVERY = Duration.ofSeconds(5);

  private static final int INCREMENTERS = 4;
  private static final int DECIDERS = 4;
  private static final int JOINT_DECIDERS = 2;
  private static final int LEASERS = 2;
  private static final int CAPACITY = 2_000;
  /**
   * Far more than two threads decide in the test, so a joint refusal is a fault: the joint
   * limiters must not run out, or a refusal could hide one limiter charged without the other.
   * (The single limiter runs out on a fast machine, which its books allow.)
   */
  private static final int JOINT_CAPACITY = 1_000_000;
  /** More than the leases the test can hold: a refusal is then a permit leaked. */
  private static final int MAX_PERMITS = 1_000;
  /** Far past the test, on a clock that does not move. */
  private static final Duration LEASE_TTL = Duration.ofHours(1);

  @Test
  public void everyCallEndsWithinItsTimeoutAndNothingAcknowledgedIsLost() throws Exception {
    StoreConfiguration.Freezing freezing = configuration() == null ? null : configuration().freezing();
    assumeTrue(freezing != null, "no server to freeze in this configuration");
    long bound = freezing.callTimeout().plus(SLACK).toNanos();
    // One group: on Redis Cluster its name is a hash tag, so the joint limiters share a slot.
    String group = group(uniqueGroup());
    RateLimiter limiter = tally.limiter(group + ":frozen", Limit.tokenBucket(CAPACITY, Duration.ofHours(1)));
    List<RateLimiter> joint = List.of(
        tally.limiter(group + ":joint-a", Limit.tokenBucket(JOINT_CAPACITY, Duration.ofHours(1))),
        tally.limiter(group + ":joint-b", Limit.tokenBucket(JOINT_CAPACITY, Duration.ofHours(1))));
    ConcurrencyLimit leases = tally.concurrency(group + ":leases", MAX_PERMITS);
    counters.incr("frozen", 0); // the counter exists before the freeze
    boolean jointly = supported("joint decisions", () -> tally.decide(joint, 0));
    boolean leasing = supported("concurrency limits", leases::inUse);

    FaultWorkload.Builder workload = FaultWorkload.builder()
        .incrementing(counters, "frozen", INCREMENTERS)
        .deciding(limiter, DECIDERS);
    if (jointly) {
      workload.decidingJointly(tally, joint, JOINT_DECIDERS);
    }
    if (leasing) {
      workload.leasing(leases, LEASE_TTL, LEASERS);
    }
    FaultWorkload load = workload.start();
    long resumedAt;
    List<String> hanging;
    try {
      Thread.sleep(300); // calls flowing before the freeze
      freezing.server().freeze();
      try {
        Thread.sleep(freezing.freezeFor().toMillis());
      } finally {
        freezing.server().resume();
        resumedAt = System.nanoTime();
      }
      long recoveryDeadline = resumedAt + RECOVERY.toNanos();
      while (System.nanoTime() < recoveryDeadline && !load.allSucceededSince(resumedAt)) {
        Thread.sleep(20);
      }
      Thread.sleep(200); // a little load after the recovery too
    } finally {
      hanging = load.stop(TimeUnit.NANOSECONDS.toMillis(bound) + 1_000);
    }

    assertThat(hanging).as("threads whose call hangs").isEmpty();
    load.assertEveryCallEndedWithin(Duration.ofNanos(bound));
    load.assertTimedOutCallsFailAsTimeouts(freezing.callTimeout());
    assertThat(load.allSucceededSince(resumedAt))
        .as("every thread succeeds again within %s of the resume (%s)", RECOVERY, load).isTrue();
    assertThat(load.acknowledged()).as("increments acknowledged").isPositive();
    assertThat(load.incrementsUnknown() + load.decisionsUnknown()).as("calls failed by the freeze").isPositive();
    assertThat(load.granted()).as("permits granted, of %d", CAPACITY).isBetween(1L, (long) CAPACITY);
    long counter = counters.get("frozen").orElseThrow();
    long taken = CAPACITY - limiter.available();
    List<Long> jointTaken = jointly ? joint.stream().map(l -> JOINT_CAPACITY - l.available()).toList() : List.of();
    long held = leasing ? leases.inUse() : 0;
    System.out.println("[" + configuration().name() + "] server frozen " + freezing.freezeFor().toMillis()
        + " ms under a " + freezing.callTimeout().toMillis() + " ms timeout: " + load + "; the store: counter "
        + counter + ", taken " + taken + (jointly ? ", joint taken " + jointTaken : "")
        + (leasing ? ", leases held " + held : ""));
    load.assertNothingAcknowledgedLost(counter, taken, CAPACITY);
    if (jointly) {
      assertThat(load.jointGrants()).as("joint grants (%s)", load).isPositive();
      load.assertJointDecisionsAllOrNothing(jointTaken, JOINT_CAPACITY);
    }
    if (leasing) {
      assertThat(load.leasesAcquired()).as("leases acquired (%s)", load).isPositive();
      load.assertLeasesKept(held);
    }
  }

  /** Whether the store has {@code what}, asked by {@code probe}; prints why not when it has not. */
  private boolean supported(String what, Runnable probe) {
    try {
      probe.run();
      return true;
    } catch (UnsupportedOperationException e) {
      System.out.println("[" + configuration().name() + "] server faults without " + what + ": " + e.getMessage());
      return false;
    }
  }
}
