package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.LocalDate;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The examples of the documents Tally was built to replace, reproduced with their exact
 * answers: a DynamoDB counter package and a cache's counting guide. A store that passes these
 * does what their users were promised, without their lost updates.
 */
public abstract class SeedExamplesContract extends TallyFixture {

  /** The DynamoDB counter's README: put, get, increment, decrement and defaults. */
  @Test
  public void dynamoDbCounterSequence() {
    counters.put("mykey", 0);
    assertThat(counters.get("mykey")).hasValue(0);
    assertThat(counters.incr("mykey", 10)).isEqualTo(10);
    assertThat(counters.incr("mykey", 5)).isEqualTo(15);
    assertThat(counters.decr("mykey", 14)).isEqualTo(1);
    assertThat(counters.incr("nonexistantkey", 0, 0)).isEqualTo(0);
    assertThat(counters.incr("someotherkey", 0, 10)).isEqualTo(10);
    assertThat(counters.incr("yetanotherkey", 1, 10)).isEqualTo(11);
  }

  /** "Run a function every 100 calls, no matter how many servers": exactly once per 100. */
  @Test
  public void everyHundredCallsRunsTheFunctionExactlyOncePerHundred() {
    AtomicInteger runs = new AtomicInteger();
    Concurrently.run(8, 125, (thread, i) -> {
      if (counters.incr("mykey", 1) % 100 == 0) {
        runs.incrementAndGet();
        counters.decr("mykey", 100);
      }
    });
    assertThat(runs).hasValue(10);
    assertThat(counters.get("mykey")).hasValue(0);
  }

  /** The counting guide: 8 threads of 250 views make 2000, none lost. */
  @Test
  public void eightThreadsOf250ViewsMake2000() {
    recordViews();
    assertThat(counters.get("views:episode:512")).hasValue(2000);
  }

  private void recordViews() {
    Concurrently.run(8, 250, (thread, i) -> counters.incr("views:episode:512"));
  }

  /** The counting guide's flush: pop moves every count to the database, once. */
  @Test
  public void flushWithPopMovesEveryCountOnce() {
    recordViews();
    counters.incr("views:episode:513");
    Map<Integer, Long> database = new HashMap<>();
    for (String key : counters.keys("views:episode:")) {
      long pending = counters.pop(key).orElse(0);
      if (pending != 0) {
        int episode = Integer.parseInt(key.substring(key.lastIndexOf(':') + 1));
        database.merge(episode, pending, Long::sum);
      }
    }
    assertThat(database).isEqualTo(Map.of(512, 2000L, 513, 1L));
    assertThat(counters.get("views:episode:512").orElse(0)).isEqualTo(0);
  }

  private long recordDownload(String fileId, LocalDate day) {
    String key = "downloads:" + fileId + ":" + day;
    counters.add(key, 0, Duration.ofDays(40));
    return counters.incr(key);
  }

  /** The counting guide's per-day download counters that clean themselves up after 40 days. */
  @Test
  public void downloadCountersKeep40DaysOfHistory() {
    LocalDate today = LocalDate.of(2026, 11, 8);
    recordDownload("talk-python-491.mp3", today);
    assertThat(recordDownload("talk-python-491.mp3", today)).isEqualTo(2);
    String key = "downloads:talk-python-491.mp3:2026-11-08";
    assertThat(counters.ttl(key)).hasValueSatisfying(ttl ->
        assertThat(ttl).isGreaterThan(Duration.ofDays(39)).isLessThanOrEqualTo(Duration.ofDays(40)));
    assertThat(counters.keys("downloads:")).isEqualTo(List.of(key));
  }

  private boolean consumeQuota(long userId, long units) {
    String key = "quota:" + userId + ":2026-11";
    counters.add(key, 1000, Duration.ofDays(40));
    return counters.decr(key, units) >= 0;
  }

  /** The counting guide's quota: {@code consume_quota(42, 999), (42), (42)} is True True False. */
  @Test
  public void quotaAnswersTrueTrueFalse() {
    assertThat(List.of(consumeQuota(42, 999), consumeQuota(42, 1), consumeQuota(42, 1)))
        .containsExactly(true, true, false);
    // An admin grants more by incrementing the key.
    counters.incr("quota:42:2026-11", 10);
    assertThat(consumeQuota(42, 1)).isTrue();
  }

  private boolean consumeBoundedQuota(long userId, long units) {
    String key = "bounded-quota:" + userId + ":2026-11";
    counters.add(key, 1000, Duration.ofDays(40));
    return counters.decr(key, units, 0, dev.tally.Bounds.floor(0)).applied();
  }

  /** The quota written with a floor: the same answers, and the counter never goes below zero. */
  @Test
  public void boundedQuotaNeverGoesBelowZero() {
    assertThat(List.of(consumeBoundedQuota(42, 999), consumeBoundedQuota(42, 1), consumeBoundedQuota(42, 1),
        consumeBoundedQuota(42, 5))).containsExactly(true, true, false, false);
    assertThat(counters.get("bounded-quota:42:2026-11")).hasValue(0);
    counters.incr("bounded-quota:42:2026-11", 10);
    assertThat(List.of(consumeBoundedQuota(42, 11), consumeBoundedQuota(42, 10), consumeBoundedQuota(42, 1)))
        .containsExactly(false, true, false);
    assertThat(counters.get("bounded-quota:42:2026-11")).hasValue(0);
  }

  /** "When a missing counter is a bug rather than a zero": the no-default form raises. */
  @Test
  public void missingCounterCanBeAnError() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> counters.incrExisting("views:episode:1", 1))
        .isInstanceOf(dev.tally.KeyNotFoundException.class);
  }
}
