package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
  void aBatchIsCappedAndCallsThatCannotJoinGoAlone() {
    Coalescing<Job, String> c = coalescing(1);
    submit(c, "k", 0);
    for (int n : new int[] {2, 1, 4, 6, 8}) {
      submit(c, "k", n);
    }
    replies.get(0).complete("ok");
    // the odd one cannot join the even batch: it goes on its own; the batch stops at three
    assertThat(sent.subList(1, sent.size())).extracting(batch -> batch.stream().map(Job::n).toList())
        .containsExactly(List.of(1), List.of(2, 4, 6));
    replies.get(2).complete("ok"); // the batch returns: the last one waiting goes
    assertThat(sent.get(sent.size() - 1)).extracting(Job::n).containsExactly(8);
  }
}
