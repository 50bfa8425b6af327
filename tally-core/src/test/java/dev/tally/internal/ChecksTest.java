package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Key validation on both sides of its short-key shortcut. */
class ChecksTest {

  @Test
  void shortKeysBelowTheSurrogatesAreValid() {
    assertThat(Checks.key("", "views:episode:512")).isEqualTo("views:episode:512");
    assertThat(Checks.key("g:", "k")).isEqualTo("g:k");
    assertThat(Checks.key("", "\uD7FF".repeat(341))).hasSize(341); // 1023 bytes, the longest shortcut
  }

  @Test
  void longerKeysAreCountedInUtf8Bytes() {
    assertThat(Checks.key("", "a".repeat(1024))).hasSize(1024);
    assertThat(Checks.key("", "\uE000".repeat(341))).hasSize(341); // above the surrogates: 3 bytes
    assertThat(Checks.key("", "\uD83D\uDE00".repeat(256))).hasSize(512); // 4 bytes a pair
    assertThat(Checks.key("", "x\uD83D\uDE00")).hasSize(3);
    assertThatThrownBy(() -> Checks.key("", "a".repeat(1025))).hasMessageContaining("1025 bytes");
    assertThatThrownBy(() -> Checks.key("", "\uD7FF".repeat(342))).hasMessageContaining("1026 bytes");
    assertThatThrownBy(() -> Checks.key("", "\uD83D\uDE00".repeat(257))).hasMessageContaining("1028 bytes");
    assertThatThrownBy(() -> Checks.key("g:", "a".repeat(1023))).hasMessageContaining("1025 bytes");
  }

  @Test
  void unpairedSurrogatesAreRefused() {
    assertThatThrownBy(() -> Checks.key("", "ab\uD800")).hasMessageContaining("surrogate at index 2");
    assertThatThrownBy(() -> Checks.key("", "ab\uDC00x")).hasMessageContaining("surrogate at index 2");
    assertThatThrownBy(() -> Checks.key("", "\uDE00\uD83D")).hasMessageContaining("surrogate at index 0");
  }
}
