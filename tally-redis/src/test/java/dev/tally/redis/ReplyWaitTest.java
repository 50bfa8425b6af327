package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The spin of {@link ReplyWait}, seen through what it costs: a caller that spins uses CPU while
 * it waits, one that parks does not. The windows are wide (a spin of 300 ms for a reply after
 * 200 ms) so that scheduling noise cannot blur the two.
 */
class ReplyWaitTest {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final long MS = 1_000_000;

  private final ScheduledExecutorService replies = Executors.newScheduledThreadPool(2);

  @AfterEach
  void stop() {
    replies.shutdownNow();
  }

  private CompletableFuture<String> replyAfter(long millis) {
    CompletableFuture<String> f = new CompletableFuture<>();
    replies.schedule(() -> f.complete("reply"), millis, TimeUnit.MILLISECONDS);
    return f;
  }

  /** CPU nanoseconds this thread spent in {@code wait.get} for a reply after {@code millis}. */
  private long cpuWaiting(ReplyWait wait, long millis) throws Exception {
    CompletableFuture<String> reply = replyAfter(millis);
    long before = THREADS.getCurrentThreadCpuTime();
    assertThat(wait.get(reply, 5_000 * MS)).isEqualTo("reply");
    return THREADS.getCurrentThreadCpuTime() - before;
  }

  @Test
  void aLoneCallerSpinsUntilTheReply() throws Exception {
    assertThat(cpuWaiting(new ReplyWait(1, 300 * MS), 200)).isGreaterThan(60 * MS);
  }

  @Test
  void turnedOffItParks() throws Exception {
    assertThat(cpuWaiting(new ReplyWait(0, 300 * MS), 200)).isLessThan(50 * MS);
    assertThat(cpuWaiting(new ReplyWait(false), 200)).isLessThan(50 * MS);
  }

  @Test
  void whileAnotherCallerWaitsItParks() throws Exception {
    ReplyWait wait = new ReplyWait(1, 300 * MS);
    CompletableFuture<String> first = replyAfter(1_000);
    Thread other = new Thread(() -> {
      try {
        wait.get(first, 5_000 * MS);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    other.start();
    Thread.sleep(50); // the other caller now waits (it spins, being alone)
    assertThat(cpuWaiting(wait, 200)).isLessThan(50 * MS);
    other.join();
  }

  @Test
  void slowRepliesStopTheSpinAndAProbeGivesItAFreshChance() throws Exception {
    ReplyWait wait = new ReplyWait(1, MS);
    for (int i = 0; i < ReplyWait.MAX_MISSES; i++) {
      assertThat(wait.spinning()).isTrue();
      wait.get(replyAfter(60), 5_000 * MS); // the spin ends long before the reply: a miss
    }
    assertThat(wait.spinning()).isFalse();
    int parked = 0;
    while (!wait.spinning()) { // only the probe can turn it back on, whether it hits or misses
      assertThat(cpuWaiting(wait, 2)).as("a call while spinning is off").isLessThan(20 * MS);
      parked++;
    }
    assertThat(parked).isEqualTo(ReplyWait.PROBE_EVERY); // the probe missed again, but has its chance
  }

  @Test
  void aReplyWithinTheSpinWinsBackTheSpin() throws Exception {
    ReplyWait wait = new ReplyWait(1, 50 * MS);
    for (int i = 0; i < ReplyWait.MAX_MISSES - 1; i++) {
      wait.get(replyAfter(250), 5_000 * MS);
    }
    wait.get(replyAfter(10), 5_000 * MS);
    wait.get(replyAfter(250), 5_000 * MS);
    assertThat(wait.spinning()).as("one miss since the hit").isTrue();
  }

  @Test
  void theCallersTimeoutStillHolds() {
    ReplyWait wait = new ReplyWait(1, 10 * MS);
    long start = System.nanoTime();
    assertThatThrownBy(() -> wait.get(new CompletableFuture<String>(), 100 * MS)).isInstanceOf(TimeoutException.class);
    assertThat(System.nanoTime() - start).isBetween(100 * MS, 2_000 * MS);
  }
}
