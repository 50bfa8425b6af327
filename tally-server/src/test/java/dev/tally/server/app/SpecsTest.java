package dev.tally.server.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SpecsTest {
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
