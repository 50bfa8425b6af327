package dev.tally.server.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SpecsTest {
  @ParameterizedTest
  @CsvSource({
      "500ms, PT0.5S", "30s, PT30S", "5m, PT5M", "2h, PT2H", "40d, PT960H", "1w, PT168H",
      "1h30m, PT1H30M", "1.5s, PT1.5S", "250us, PT0.00025S", "7ns, PT0.000000007S", "0s, PT0S",
      "PT15M, PT15M", "' 10s ', PT10S"})
  void durationsAreReadInEitherForm(String text, String iso) {
    assertThat(Specs.duration(text)).isEqualTo(Duration.parse(iso));
  }

  @ParameterizedTest
  @ValueSource(strings = {"40days", "4x", "s", "1h 30m", "-5s", "1.s", ""})
  void badDurationsSayWhatToType(String text) {
    assertThatThrownBy(() -> Specs.duration(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("expected a duration like 500ms, 30s, 5m, 40d");
  }

  @ParameterizedTest
  @CsvSource({"PT0S, 0s", "PT0.85S, 850ms", "PT40S, 40s", "PT2.5S, 2.5s", "PT960H, 40d",
      "PT1H30M, 1h30m", "PT25H0.001S, 1d1h0.001s", "PT0.000002S, 2us"})
  void durationsAreWrittenTheWayTheyAreRead(String iso, String text) {
    Duration d = Duration.parse(iso);
    assertThat(Specs.format(d)).isEqualTo(text);
    assertThat(Specs.duration(text)).isEqualTo(d);
  }

  @ParameterizedTest
  @CsvSource({"100/1m, , 100, PT1M", "100/m, , 100, PT1M", "10:1/1s, 10, 1, PT1S", "5/day, , 5, PT24H"})
  void ratesHaveAnOptionalPrefixAndAPeriod(String text, Long prefix, long count, String period) {
    assertThat(Specs.rate(text, "a rate", "100/1m"))
        .isEqualTo(new Specs.Rate(prefix, count, Duration.parse(period)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"100", "100/", "100/0s", "x/1m", "100 per minute", "99999999999999999999/1s"})
  void badRatesSayWhatToType(String text) {
    assertThatThrownBy(() -> Specs.rate(text, "a rate", "100/1m"))
        .hasMessageContaining("expected a rate like 100/1m");
  }

  @ParameterizedTest
  @CsvSource({"5, 5", "-3, -3", "0.5, 0.5", "1e3, 1000.0", "9223372036854775807, 9223372036854775807"})
  void numbersAreIntegersOrDecimals(String text, String expected) {
    assertThat(Specs.number(text, "delta").toString()).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {"ten", "", "NaN", "Infinity", "1e400", "0x10", "9223372036854775808"})
  void badNumbersSayWhatToType(String text) {
    assertThatThrownBy(() -> Specs.number(text, "delta"))
        .hasMessageContaining("expected an integer like 5 or -3, or a decimal like 0.5");
  }
}
