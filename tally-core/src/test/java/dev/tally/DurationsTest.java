package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

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

  @ParameterizedTest
  @CsvSource({
      "500ms, PT0.5S", "30s, PT30S", "5m, PT5M", "2h, PT2H", "40d, PT960H", "1w, PT168H",
      "1h30m, PT1H30M", "1.5s, PT1.5S", "250us, PT0.00025S", "7ns, PT0.000000007S", "0s, PT0S",
      "PT15M, PT15M", "' 10s ', PT10S"})
  void durationsAreReadInEitherForm(String text, String iso) {
    assertThat(Durations.parse(text)).isEqualTo(Duration.parse(iso));
  }

  @ParameterizedTest
  @ValueSource(strings = {"40days", "4x", "s", "1h 30m", "-5s", "1.s", "", "PT-5S"})
  void badDurationsSayWhatToType(String text) {
    assertThatThrownBy(() -> Durations.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith(Durations.HINT);
  }

  @ParameterizedTest
  @CsvSource({"PT0S, 0s", "PT0.85S, 850ms", "PT40S, 40s", "PT2.5S, 2.5s", "PT960H, 40d",
      "PT1H30M, 1h30m", "PT25H0.001S, 1d1h0.001s", "PT0.000002S, 2us"})
  void durationsAreWrittenTheWayTheyAreRead(String iso, String text) {
    Duration d = Duration.parse(iso);
    assertThat(Durations.format(d)).isEqualTo(text);
    assertThat(Durations.parse(text)).isEqualTo(d);
  }
}
