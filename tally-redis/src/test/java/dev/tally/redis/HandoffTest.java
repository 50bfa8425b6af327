package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.Internals;
import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * {@link Handoff}'s slot, step by step, and who completes a limiter batch: the spinning caller
 * for a batch of blocking calls, the thread the reply arrives on for any batch with an
 * asynchronous call in it.
 */
class HandoffTest {
  private final Handoff handoff = new Handoff();

  /** A task that records the thread it ran on. */
  private static Runnable recording(AtomicReference<Thread> ranOn) {
    return () -> ranOn.set(Thread.currentThread());
  }

  @Test
  void withNoSpinnerServingATaskRunsAtOnceWhereItIsSubmitted() {
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    handoff.submit(recording(ranOn));
    assertThat(ranOn.get()).isSameAs(Thread.currentThread());
  }

  @Test
  void aServingSpinnerRunsTheTaskOnItsOwnThread() throws Exception {
    assertThat(handoff.open()).isTrue();
    AtomicReference<Thread> ranOn = new AtomicReference<>();
    Thread io = new Thread(() -> handoff.submit(recording(ranOn)));
    io.start();
    io.join();
    assertThat(ranOn.get()).as("waiting for the spinner").isNull();
    assertThat(handoff.serve()).isTrue();
    assertThat(ranOn.get()).isSameAs(Thread.currentThread());
    assertThat(handoff.serve()).as("nothing left").isFalse();
    handoff.close();
  }

  @Test
  void onlyOneSpinnerServesAtATime() throws Exception {
    assertThat(handoff.open()).isTrue();
    CompletableFuture<Boolean> other = CompletableFuture.supplyAsync(handoff::open);
    assertThat(other.get()).isFalse();
    handoff.close();
    assertThat(handoff.open()).as("free again once closed").isTrue();
    handoff.close();
  }

  @Test
  void aTaskSubmittedWhileAnotherWaitsRunsWhereItIsSubmitted() {
    handoff.open();
    AtomicReference<Thread> first = new AtomicReference<>();
    AtomicReference<Thread> second = new AtomicReference<>();
    handoff.submit(recording(first));
    handoff.submit(recording(second));
    assertThat(first.get()).isNull();
    assertThat(second.get()).as("the slot was taken: nothing queues behind a spinner").isSameAs(Thread.currentThread());
    handoff.close();
    assertThat(first.get()).as("run when the spinner stopped").isNotNull();
  }

  @Test
  void closingRunsWhatWasLeftAndLaterTasksRunWhereSubmitted() throws Exception {
    handoff.open();
    List<String> ran = new ArrayList<>();
    Thread io = new Thread(() -> handoff.submit(() -> ran.add("left in the slot")));
    io.start();
    io.join();
    handoff.close();
    assertThat(ran).containsExactly("left in the slot");
    handoff.submit(() -> ran.add("after"));
    assertThat(ran).containsExactly("left in the slot", "after");
  }

  /** Runs one batch of two calls through LimiterBatches; the thread that completed the first. */
  private Thread completerOf(boolean firstBlocking, boolean secondBlocking) throws Exception {
    List<CompletableFuture<List<Object>>> replies = new ArrayList<>();
    LimiterBatches batches = new LimiterBatches(batch -> {
      CompletableFuture<List<Object>> reply = new CompletableFuture<>();
      replies.add(reply);
      return reply;
    }, handoff);
    LimiterCall call = Internals.referenceLimiter("hot", List.of(Limit.tokenBucket(10, 10, Duration.ofSeconds(1))));
    CompletableFuture<Decision> head = batches.submit(call, LimiterOperation.ACQUIRE, 1, true);
    CompletableFuture<Decision> a = batches.submit(call, LimiterOperation.ACQUIRE, 1, firstBlocking);
    CompletableFuture<Decision> b = batches.submit(call, LimiterOperation.ACQUIRE, 1, secondBlocking);
    AtomicReference<Thread> completer = new AtomicReference<>();
    a.whenComplete((d, e) -> completer.set(Thread.currentThread()));
    replies.get(0).complete(List.of(1L, 9L, 10L, 0L, 100L, 0L)); // the head's own batch, sent at once
    assertThat(replies).as("a and b, sent together when the head's reply came").hasSize(2);
    assertThat(handoff.open()).isTrue(); // this thread now plays the spinner
    Thread io = new Thread(() -> replies.get(1).complete(List.of(1L, 8L, 10L, 0L, 200L, 0L, 1L, 7L, 10L, 0L, 300L, 0L)), "io");
    io.start();
    io.join();
    handoff.serve();
    handoff.close();
    assertThat(a.get().remaining()).isEqualTo(8);
    assertThat(b.get().remaining()).isEqualTo(7);
    assertThat(head.get().remaining()).isEqualTo(9);
    return completer.get();
  }

  @Test
  void aBatchOfBlockingCallsIsCompletedByTheSpinner() throws Exception {
    assertThat(completerOf(true, true)).isSameAs(Thread.currentThread());
  }

  @Test
  void aBatchWithAnAsynchronousCallIsCompletedWhereTheReplyArrives() throws Exception {
    assertThat(completerOf(true, false).getName()).isEqualTo("io");
    assertThat(completerOf(false, true).getName()).isEqualTo("io");
  }
}
