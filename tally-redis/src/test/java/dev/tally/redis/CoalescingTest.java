package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The lanes of {@link Coalescing}, driven by hand: the "command" is a future the test
 * completes, so what is sent when can be checked step by step.
 */
class CoalescingTest {
  record Job(String key, int n, CompletableFuture<Integer> result) implements Coalescing.Call<Integer> {}

  private final List<List<Job>> sent = new ArrayList<>();
  private final List<CompletableFuture<String>> replies = new ArrayList<>();

  private Coalescing<Job, String> coalescing(int maxInFlight) {
    return new Coalescing<>(maxInFlight, 3, (first, next) -> first.n() % 2 == next.n() % 2, batch -> {
      sent.add(batch);
      CompletableFuture<String> reply = new CompletableFuture<>();
      replies.add(reply);
      return reply;
    }, (batch, reply, failure) -> batch.forEach(j -> j.result().complete(j.n())));
  }

  private static Job submit(Coalescing<Job, String> c, String key, int n) {
    Job j = new Job(key, n, new CompletableFuture<>());
    c.submit(j);
    return j;
  }

  @Test
  void callsArrivingWhileOneIsInFlightGoTogetherWhenItReturns() {
    Coalescing<Job, String> c = coalescing(1);
    Job first = submit(c, "k", 0);
    Job a = submit(c, "k", 2);
    Job b = submit(c, "k", 4);
    assertThat(sent).hasSize(1);
    replies.get(0).complete("ok");
    assertThat(first.result()).isCompletedWithValue(0);
    assertThat(sent).hasSize(2);
    assertThat(sent.get(1)).containsExactly(a, b);
    replies.get(1).complete("ok");
    assertThat(a.result()).isCompletedWithValue(2);
    assertThat(b.result()).isCompletedWithValue(4);
  }

  @Test
  void keysDoNotWaitForEachOther() {
    Coalescing<Job, String> c = coalescing(1);
    submit(c, "k", 0);
    submit(c, "other", 0);
    assertThat(sent).hasSize(2);
  }

  @Test
  void upToMaxInFlightGoAtOnce() {
    Coalescing<Job, String> c = coalescing(2);
    submit(c, "k", 0);
    submit(c, "k", 2);
    submit(c, "k", 4);
    assertThat(sent).hasSize(2);
    replies.get(1).complete("ok"); // either slot freeing sends what waits
    assertThat(sent).hasSize(3);
  }

  @Test
  void aCallThatCannotJoinEndsTheBatchAndHeadsTheNext() {
    Coalescing<Job, String> c = coalescing(1);
    submit(c, "k", 0);
    for (int n : new int[] {2, 4, 1, 3, 5, 7, 6}) {
      submit(c, "k", n);
    }
    for (int i = 0; i < 4; i++) {
      replies.get(i).complete("ok");
    }
    // arrival order kept: the evens up to the first odd, the odds (at most three), the rest
    assertThat(sent).extracting(batch -> batch.stream().map(Job::n).toList())
        .containsExactly(List.of(0), List.of(2, 4), List.of(1, 3, 5), List.of(7), List.of(6));
  }

  /**
   * Many callers, each sending two calls without waiting in between (as an asynchronous caller
   * may), one completion thread as Lettuce's I/O thread, on a key whose idle lane keeps leaving
   * the map and coming back: never more than one command in flight, and no caller's second call
   * sent before its first. (A lane removed while a caller was joining it broke both.)
   */
  @Test
  void aLaneLeavingTheMapNeverLetsACallOvertakeOrExceedsTheInFlightLimit() throws Exception {
    record Seq(String key, int thread, int seq, CompletableFuture<Integer> result) implements Coalescing.Call<Integer> {}
    int threads = 8;
    int pairs = 10_000;
    ExecutorService io = Executors.newSingleThreadExecutor();
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger mostInFlight = new AtomicInteger();
    Queue<String> overtaken = new ConcurrentLinkedQueue<>();
    int[] lastSent = new int[threads];
    Arrays.fill(lastSent, -1);
    Coalescing<Seq, String> c = new Coalescing<>(1, 128, (first, next) -> true, batch -> {
      mostInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      synchronized (lastSent) {
        for (Seq j : batch) {
          if (j.seq() < lastSent[j.thread()]) {
            overtaken.add("caller " + j.thread() + ": call " + j.seq() + " sent after " + lastSent[j.thread()]);
          }
          lastSent[j.thread()] = Math.max(lastSent[j.thread()], j.seq());
        }
      }
      CompletableFuture<String> reply = new CompletableFuture<>();
      io.execute(() -> {
        inFlight.decrementAndGet();
        reply.complete("ok");
      });
      return reply;
    }, (batch, reply, failure) -> batch.forEach(j -> j.result().complete(j.seq())));
    List<Thread> callers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int id = t;
      Thread caller = new Thread(() -> {
        for (int i = 0; i < 2 * pairs; i += 2) {
          Seq a = new Seq("k", id, i, new CompletableFuture<>());
          Seq b = new Seq("k", id, i + 1, new CompletableFuture<>());
          c.submit(a);
          c.submit(b);
          a.result().orTimeout(10, TimeUnit.SECONDS).join();
          b.result().orTimeout(10, TimeUnit.SECONDS).join();
        }
      });
      caller.start();
      callers.add(caller);
    }
    for (Thread caller : callers) {
      caller.join();
    }
    io.shutdown();
    assertThat(overtaken).isEmpty();
    assertThat(mostInFlight.get()).isEqualTo(1);
  }
}
