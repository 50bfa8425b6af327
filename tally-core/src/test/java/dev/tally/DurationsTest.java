package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Durations in messages are written as the command line and HTTP API read them. */
class DurationsTest {
  @Test
  void largestUnitsFirstExactToTheMillisecond() {
    assertThat(Durations.format(Duration.ofSeconds(2))).isEqualTo("2s");
    assertThat(Durations.format(Duration.ofMillis(500))).isEqualTo("500ms");
    assertThat(Durations.format(Duration.ofMinutes(90))).isEqualTo("1h30m");
    assertThat(Durations.format(Duration.ofMillis(2500))).isEqualTo("2.5s");
    assertThat(Durations.format(Duration.ofDays(40))).isEqualTo("40d");
    assertThat(Durations.format(Duration.ZERO)).isEqualTo("0s");
    assertThat(Durations.format(Duration.ofNanos(250_000))).isEqualTo("250us");
  }

  @Test
  void messagesThatReachClientsSayDurationsSo() {
    assertThat(Limit.tokenBucket(100, 100, Duration.ofMinutes(1)).toString()).contains("100/1m").doesNotContain("PT");
    assertThat(Limit.fixedWindow(10, Duration.ofMinutes(90)).toString()).contains("10/1h30m");
    assertThatThrownBy(() -> Limit.fixedWindow(10, Duration.ofSeconds(-2)))
        .hasMessageContaining("-2s").hasMessageNotContaining("PT");
    assertThat(CircuitBreaker.of(5, Duration.ofSeconds(1)).toString()).contains("open for 1s");
  }
}
