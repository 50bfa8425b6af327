package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The server frozen under load: what a hung host, a long stall or a network partition does to
 * a client whose sockets stay open and hear nothing. Threads increment one counter and decide on
 * one limiter while the harness freezes the server ({@link ServerFreeze}) for longer than the
 * call timeout, then resumes it. The store passes if
 *
 * <ul>
 *   <li>every call ends within its timeout and {@link #SLACK}, answered or failed with a
 *       {@link dev.tally.StoreException}: none hangs;
 *   <li>every thread succeeds again within {@link #RECOVERY} of the resume;
 *   <li>nothing acknowledged is lost and nothing counted twice: the counter ends between the
 *       acknowledged increments and those plus the calls whose outcome is unknown (failed, so
 *       "may or may not have applied"), and the limiter never granted more than its capacity
 *       and remembers every grant it acknowledged.
 * </ul>
 *
 * Time here is the wall clock's by necessity: a timeout is a bound on real waiting. The kit's
 * manual clock still drives the limiter, frozen, so the bucket never refills and every grant
 * shows in what is left.
 */
@Tag("server-faults")
public abstract class ServerFaultContract extends TallyFixture {
  /** How far past its timeout a call may end: the time to fail it and hand the failure back. */
  public static final Duration SLACK = Duration.ofSeconds(1);
  /** How soon after the server resumes every thread's calls succeed again. */
  public static final Duration RECOVERY = Duration.ofSeconds(5);

  private static final int INCREMENTERS = 4;
  private static final int DECIDERS = 4;
  private static final int CAPACITY = 2_000;

  @Test
  public void everyCallEndsWithinItsTimeoutAndNothingAcknowledgedIsLost() throws Exception {
    StoreConfiguration.Freezing freezing = configuration() == null ? null : configuration().freezing();
    assumeTrue(freezing != null, "no server to freeze in this configuration");
    long bound = freezing.callTimeout().plus(SLACK).toNanos();
    RateLimiter limiter = tally.limiter(group(uniqueGroup()) + ":frozen", Limit.tokenBucket(CAPACITY, Duration.ofHours(1)));
    counters.incr("frozen", 0); // the counter exists before the freeze

    FaultWorkload load = FaultWorkload.start(counters, "frozen", INCREMENTERS, limiter, DECIDERS);
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
    assertThat(load.allSucceededSince(resumedAt))
        .as("every thread succeeds again within %s of the resume (%s)", RECOVERY, load).isTrue();
    assertThat(load.acknowledged()).as("increments acknowledged").isPositive();
    assertThat(load.incrementsUnknown() + load.decisionsUnknown()).as("calls failed by the freeze").isPositive();
    assertThat(load.granted()).as("permits granted, of %d", CAPACITY).isBetween(1L, (long) CAPACITY);
    load.assertNothingAcknowledgedLost(counters.get("frozen").orElseThrow(), CAPACITY - limiter.available(), CAPACITY);
  }
}
