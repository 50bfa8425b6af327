package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.tck.ManualTimeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Two hosts whose clocks differ by 200 ms across a window boundary. Limiter state never moves
 * back in time, even once the limiter is full again and holds no state: the item that remains,
 * expired, keeps the latest instant decided at.
 */
class LaggingClockTest {
  @Test
  void aHostBehindDecidesInTheWindowTheOtherHasReachedEvenAfterTheStateEmptied() {
    String name = "lag-" + UUID.randomUUID();
    Limit limit = Limit.fixedWindow(2, Duration.ofMinutes(1));
    ManualTimeSource ahead = new ManualTimeSource(Instant.parse("2026-11-08T00:01:00.100Z"));
    ManualTimeSource behind = new ManualTimeSource(Instant.parse("2026-11-08T00:00:59.900Z"));
    try (Tally a = Tally.builder(Dynalite.uri()).timeSource(ahead).build();
        Tally b = Tally.builder(Dynalite.uri()).timeSource(behind).build()) {
      RateLimiter la = a.limiter(name, limit);
      RateLimiter lb = b.limiter(name, limit);
      assertThat(la.tryAcquire()).isTrue(); // the 00:01 window, count 1
      la.refund(1); // count 0: full again, no state to keep but the instant
      assertThat(lb.tryAcquire()).isTrue(); // decided at a's instant: the 00:01 window
      assertThat(lb.tryAcquire()).isTrue();
      assertThat(la.tryAcquire()).as("the 00:01 window already granted its 2").isFalse();
      assertThatThrownBy(() -> a.counters().get(name)).as("the name is a live limiter's, no counter's")
          .isInstanceOf(dev.tally.WrongKindException.class);
    }
  }
}
