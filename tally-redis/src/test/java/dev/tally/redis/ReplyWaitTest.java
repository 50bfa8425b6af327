package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The spin of {@link ReplyWait}, seen through its counts of spins begun and of spins that caught
 * their reply (a spinner yields its core, so its CPU time says little on a busy machine). The
 * windows are wide (a spin of 300 ms for a reply after 200 ms) so that scheduling noise cannot
 * blur a catch and a miss.
 */
class ReplyWaitTest {
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

  /** How {@code wait.get} waited for a reply after {@code millis}: caught, missed (spun) or parked. */
  private String waiting(ReplyWait wait, long millis) throws Exception {
    long spins = wait.spins();
    long catches = wait.catches();
    assertThat(wait.get(replyAfter(millis), 5_000 * MS)).isEqualTo("reply");
    return wait.catches() > catches ? "caught" : wait.spins() > spins ? "missed" : "parked";
  }

  @Test
  void aCallerSpinsUntilTheReply() throws Exception {
    assertThat(waiting(new ReplyWait(1, 300 * MS), 200)).isEqualTo("caught");
  }

  @Test
  void turnedOffItParks() throws Exception {
    assertThat(waiting(new ReplyWait(0, 300 * MS), 200)).isEqualTo("parked");
    assertThat(waiting(new ReplyWait(false, new Handoff()), 200)).isEqualTo("parked");
  }

  @Test
  void whileAnotherCallerSpinsItParks() throws Exception {
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
    long deadline = System.nanoTime() + 5_000 * MS;
    while (wait.spins() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(1); // until the other caller spins, for 300 ms, in the one place there is
    }
    assertThat(waiting(wait, 200)).isEqualTo("parked");
    other.join();
  }

  /** Calls with replies after {@code millis} until lone callers stop spinning; how many it took. */
  private static int missesUntilParking(ReplyWait wait, long millis) throws Exception {
    int calls = 0;
    while (wait.spinning()) {
      assertThat(calls).as("still spinning after %d slow replies", calls).isLessThan(100);
      wait.get(CompletableFuture.supplyAsync(() -> "reply",
          CompletableFuture.delayedExecutor(millis, TimeUnit.MILLISECONDS)), 5_000 * MS);
      calls++;
    }
    return calls;
  }

  @Test
  void slowRepliesStopTheSpinAndOneCallInSoManyProbes() throws Exception {
    ReplyWait wait = new ReplyWait(1, 20 * MS);
    assertThat(missesUntilParking(wait, 40)).as("about 11 misses from a clean start").isBetween(10, 12);
    int spun = 0;
    for (int i = 0; i < ReplyWait.PROBE_EVERY; i++) {
      if (!waiting(wait, 30).equals("parked")) { // slower than the spin: a miss, spun or parked
        spun++;
      }
    }
    assertThat(spun).as("the probe").isEqualTo(1);
    assertThat(wait.spinning()).isFalse();
  }

  @Test
  void aBurstOfSlowRepliesDoesNotStopTheSpin() throws Exception {
    ReplyWait wait = new ReplyWait(1, 5 * MS);
    for (int i = 0; i < 50; i++) {
      wait.get(replyAfter(0), 5_000 * MS);
    }
    for (int i = 0; i < 6; i++) {
      wait.get(replyAfter(15), 5_000 * MS); // each a miss
    }
    assertThat(wait.spinning()).as("six misses in a row after fifty hits").isTrue();
  }

  @Test
  void repliesThatWouldHaveBeenCaughtWinBackTheSpin() throws Exception {
    ReplyWait wait = new ReplyWait(1, 5 * MS);
    missesUntilParking(wait, 15);
    int calls = 0;
    while (!wait.spinning()) {
      assertThat(waiting(wait, 1)).isEqualTo("parked");
      calls++;
    }
    assertThat(calls).as("parked calls whose replies came within the spin's length").isBetween(1, 8);
  }

  @Test
  void aSpinningCallerRunsTheCompletionsHandedToIt() throws Exception {
    Handoff handoff = new Handoff();
    ReplyWait wait = new ReplyWait(1, 2_000 * MS, handoff);
    CompletableFuture<String> reply = new CompletableFuture<>();
    CompletableFuture<Thread> completedOn = new CompletableFuture<>();
    CompletableFuture<String> caller = CompletableFuture.supplyAsync(() -> {
      try {
        return wait.get(reply, 5_000 * MS);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    while (handoff.open()) { // free: the caller does not spin yet
      handoff.close();
      Thread.sleep(5);
    }
    Thread io = new Thread(() -> handoff.submit(() -> {
      completedOn.complete(Thread.currentThread());
      reply.complete("reply");
    }), "io");
    io.start();
    io.join();
    assertThat(caller.get()).isEqualTo("reply");
    assertThat(completedOn.get().getName()).as("the spinning caller's thread, not the I/O thread").isNotEqualTo("io");
  }

  @Test
  void theCallersTimeoutStillHolds() {
    ReplyWait wait = new ReplyWait(1, 10 * MS);
    long start = System.nanoTime();
    assertThatThrownBy(() -> wait.get(new CompletableFuture<String>(), 100 * MS)).isInstanceOf(TimeoutException.class);
    assertThat(System.nanoTime() - start).isBetween(100 * MS, 2_000 * MS);
  }
}
