package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The lanes and hand-offs of {@link Coalescing}, driven by hand: the "command" is a future the
 * test completes, so which thread completes which call can be checked step by step.
 */
class CoalescingTest {
  record Job(String key, int n, CompletableFuture<Integer> result, Coalescing.Handoff handoff)
      implements Coalescing.Call<Integer> {}

  private final List<List<Job>> sent = new ArrayList<>();
  private final List<CompletableFuture<String>> replies = new ArrayList<>();
  private final Coalescing<Job, String> coalescing = new Coalescing<>(1, 100, (a, b) -> true, batch -> {
    sent.add(batch);
    CompletableFuture<String> reply = new CompletableFuture<>();
    replies.add(reply);
    return reply;
  }, (batch, reply, failure) -> batch.stream().map(j -> (Runnable) () -> j.result().complete(j.n())).toArray(Runnable[]::new));

  private Job submit(int n, boolean blocking) {
    Job j = new Job("k", n, new CompletableFuture<>(), blocking ? new Coalescing.Handoff() : null);
    coalescing.submit(j);
    return j;
  }

  @Test
  void callsArrivingWhileOneIsInFlightGoTogetherWhenItReturns() {
    Job first = submit(0, false);
    List<Job> waiting = List.of(submit(1, false), submit(2, false), submit(3, false));
    assertThat(sent).hasSize(1);
    replies.get(0).complete("ok");
    assertThat(first.result()).isCompletedWithValue(0);
    assertThat(sent).hasSize(2);
    assertThat(sent.get(1)).containsExactlyElementsOf(waiting);
  }

  @Test
  void theReplyThreadHandsTheRestToTwoWaitingCallers() {
    submit(0, false);
    List<Job> batch = new ArrayList<>();
    for (int i = 1; i <= 6; i++) {
      batch.add(submit(i, true));
    }
    batch.get(0).handoff().finish(); // this caller stopped waiting (a timeout): it cannot help
    replies.get(0).complete("ok");
    replies.get(1).complete("ok"); // the batch of six: completes 1 (gone), 2 and 3 (handed), then stops
    assertThat(batch.subList(0, 3)).allMatch(j -> j.result().isDone());
    assertThat(batch.subList(3, 6)).noneMatch(j -> j.result().isDone());
    batch.get(2).handoff().finish(); // caller 3 wakes and completes the rest
    assertThat(batch).allMatch(j -> j.result().isDone());
    batch.get(1).handoff().finish(); // caller 2 finds nothing left
    assertThat(batch).extracting(j -> j.result().join()).containsExactly(1, 2, 3, 4, 5, 6);
  }

  @Test
  void asynchronousCallsAreNeverHandedWork() {
    submit(0, false);
    List<Job> batch = new ArrayList<>();
    for (int i = 1; i <= 6; i++) {
      batch.add(submit(i, false));
    }
    replies.get(0).complete("ok");
    replies.get(1).complete("ok");
    assertThat(batch).allMatch(j -> j.result().isDone());
  }

  @Test
  void aHandoffRunsItsWorkOnceAndOnlyIfTakenWhileWaiting() {
    int[] runs = new int[1];
    Coalescing.Handoff waiting = new Coalescing.Handoff();
    assertThat(waiting.handTo(() -> runs[0]++)).isTrue();
    waiting.finish();
    assertThat(runs[0]).isEqualTo(1);
    Coalescing.Handoff gone = new Coalescing.Handoff();
    gone.finish();
    assertThat(gone.handTo(() -> runs[0]++)).isFalse();
    assertThat(runs[0]).isEqualTo(1);
  }
}
