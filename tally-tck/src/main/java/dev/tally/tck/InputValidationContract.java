package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Bad input is refused with a clear message before anything is written. Runs on every store,
 * including {@code null:}: validation must not depend on where counters are kept.
 */
public abstract class InputValidationContract extends TallyFixture {

  @Test
  public void emptyAndNullKeysAreRefused() {
    assertThatThrownBy(() -> counters.incr("")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> counters.incr(null)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("null");
    assertThatThrownBy(() -> counters.get("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> counters.transaction(tx -> tx.incr(""))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  public void keysUpTo1024Utf8BytesAreAcceptedAndLongerOnesRefused() {
    String group = uniqueGroup();
    Counters g = tally.counters(group);
    int room = Counters.MAX_KEY_BYTES - group.length() - 1; // the prefix counts
    String longest = "k" + "x".repeat(room - 1);
    assertThatCode(() -> g.incr(longest)).doesNotThrowAnyException();
    String tooLong = longest + "x";
    assertThatThrownBy(() -> g.incr(tooLong))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1024");
    assertThat(g.keys("")).allSatisfy(k -> assertThat(k).isEqualTo(longest));
  }

  @Test
  public void keyLengthIsCountedInUtf8Bytes() {
    Counters root = tally.counters();
    String euro = "€".repeat(341); // 1023 bytes
    assertThatCode(() -> root.incr(euro + "x")).doesNotThrowAnyException();
    assertThatThrownBy(() -> root.incr(euro + "€")).isInstanceOf(IllegalArgumentException.class);
    root.delete(euro + "x");
  }

  @Test
  public void unpairedSurrogatesAreRefused() {
    assertThatThrownBy(() -> counters.incr("bad\uD800key"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("surrogate");
  }

  @Test
  public void nonFiniteNumbersAreRefusedAndWriteNothing() {
    for (double bad : new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
      assertThatThrownBy(() -> counters.incr("f", bad)).isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("finite");
      assertThatThrownBy(() -> counters.incr("f", 1.0, bad)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> counters.put("f", bad, null)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> counters.add("f", bad, null)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> counters.transaction(tx -> tx.incr("f", bad, 0.0)))
          .isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(counters.getDouble("f")).isEmpty();
  }

  @Test
  public void nonPositiveTtlsAreRefusedAndWriteNothing() {
    assertThatThrownBy(() -> counters.put("k", 1, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl");
    assertThatThrownBy(() -> counters.add("k", 1, Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> counters.touch("k", Duration.ofMillis(-5))).isInstanceOf(IllegalArgumentException.class);
    assertThat(counters.get("k")).isEmpty();
  }

  @Test
  public void decrementByLongMinValueIsRefused() {
    assertThatThrownBy(() -> counters.decr("k", Long.MIN_VALUE)).isInstanceOf(IllegalArgumentException.class);
    assertThat(counters.get("k")).isEmpty();
  }

  @Test
  public void groupNamesMustNotBeEmpty() {
    assertThatThrownBy(() -> tally.counters("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> tally.counters(null)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  public void nullPrefixIsRefused() {
    assertThatThrownBy(() -> counters.keys(null)).isInstanceOf(IllegalArgumentException.class);
  }
}
