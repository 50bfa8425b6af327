package dev.tally.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RateLimitKeysTest {
  @Test
  void longKeysAreHashedAndMissingOnesAreAnonymous() {
    assertThat(TallyRateLimits.key(null)).isEqualTo("anonymous");
    assertThat(TallyRateLimits.key("")).isEqualTo("anonymous");
    assertThat(TallyRateLimits.key("alice")).isEqualTo("alice");
    String longKey = "k".repeat(TallyRateLimits.MAX_KEY_BYTES + 1);
    assertThat(TallyRateLimits.key(longKey)).startsWith("sha256:").hasSize(7 + 64)
        .isEqualTo(TallyRateLimits.key(longKey));
  }
}
