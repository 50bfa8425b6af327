package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyException;
import dev.tally.tck.ManualTimeSource;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * DynamoDB deletes expired items lazily (dynalite never does), so an expired item of one kind
 * may still sit under a name the other kind wants. It is missing for both: a counter operation
 * replaces an expired limiter's item, and a limiter an expired counter's, as every store does.
 * A live one is still refused.
 */
class ExpiredItemsTest {
  private final ManualTimeSource clock = new ManualTimeSource();
  private Tally tally;
  private Counters counters;

  @BeforeEach
  void open() {
    tally = Tally.builder(Dynalite.uri()).timeSource(clock).build();
    counters = tally.counters();
  }

  @AfterEach
  void close() {
    tally.close();
  }

  /** A name whose limiter state exists, has expired (the limiter is full again), and is still there. */
  private String lapsedLimiter() {
    String name = "lapsed-" + UUID.randomUUID();
    RateLimiter l = tally.limiter(name, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThat(l.tryAcquire()).isTrue();
    assertThatThrownBy(() -> counters.incr(name)).as("while live").isInstanceOf(TallyException.class)
        .hasMessageContaining("rate limiter's state");
    clock.advance(Duration.ofHours(2));
    return name;
  }

  @Test
  void everyCounterOperationTakesTheNameOfALapsedLimiter() {
    for (Consumer<String> op : List.<Consumer<String>>of(
        name -> assertThat(counters.incr(name, 2)).isEqualTo(2),
        name -> assertThat(counters.incr(name, 2, 10)).isEqualTo(12),
        name -> assertThat(counters.incr(name, 0.5)).isEqualTo(0.5),
        name -> counters.put(name, 12),
        name -> assertThat(counters.add(name, 12, null)).isTrue())) {
      String name = lapsedLimiter();
      assertThat(counters.get(name)).isEmpty();
      op.accept(name);
      assertThat(counters.getDouble(name)).isPresent();
      assertThat(counters.keys("")).contains(name);
    }
    String popped = lapsedLimiter();
    assertThat(counters.pop(popped)).isEmpty();
    assertThat(counters.incr(popped)).isEqualTo(1);
  }

  @Test
  void aLimiterTakesTheNameOfAnExpiredCounter() {
    String name = "expired-" + UUID.randomUUID();
    counters.put(name, 1, Duration.ofSeconds(1));
    RateLimiter l = tally.limiter(name, Limit.tokenBucket(5, Duration.ofMinutes(1)));
    assertThatThrownBy(l::tryAcquire).as("while live").isInstanceOf(TallyException.class)
        .hasMessageContaining("holds a counter");
    clock.advance(Duration.ofHours(2));
    assertThat(l.tryAcquire(5)).isTrue();
    assertThat(l.tryAcquire()).isFalse();
    assertThatThrownBy(() -> counters.incr(name)).isInstanceOf(TallyException.class)
        .hasMessageContaining("rate limiter's state");
  }
}
