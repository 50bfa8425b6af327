package dev.tally.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Limit;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import org.junit.jupiter.api.Test;

/** The text form of limits, as the command line and the server write them. */
class PolicyTest {
  private static final Instant NOW = Instant.parse("2026-02-10T12:00:00Z");

  @Test
  void everyAlgorithmParsesWithItsWindow() {
    assertThat(Policy.parse("p", "token-bucket 100/1m").limit()).isEqualTo(Limit.tokenBucket(100, Duration.ofMinutes(1)));
    assertThat(Policy.parse("p", "token-bucket 100/1m").windowSeconds(NOW)).isEqualTo(60);
    assertThat(Policy.parse("p", "token-bucket 10:1/1s").limit()).isEqualTo(Limit.tokenBucket(10, 1, Duration.ofSeconds(1)));
    assertThat(Policy.parse("p", "token-bucket 10:1/1s").windowSeconds(NOW)).isEqualTo(10);
    assertThat(Policy.parse("p", "leaky-bucket 100/1m").limit()).isEqualTo(Limit.leakyBucket(100, Duration.ofMinutes(1)));
    assertThat(Policy.parse("p", "gcra 15:30/60s").limit()).isEqualTo(Limit.gcra(15, 30, Duration.ofSeconds(60)));
    assertThat(Policy.parse("p", "gcra 15:30/60s").windowSeconds(NOW)).isEqualTo(32);
    assertThat(Policy.parse("p", "fixed-window 1000/1h").limit()).isEqualTo(Limit.fixedWindow(1000, Duration.ofHours(1)));
    assertThat(Policy.parse("p", "sliding-window 5/500ms").windowSeconds(NOW)).isEqualTo(1);
    assertThat(Policy.parse("p", "quota 1000/month").limit())
        .isEqualTo(Limit.quota(1000, Limit.Period.MONTH, java.time.ZoneOffset.UTC));
    assertThat(Policy.parse("p", "quota 1000/month").windowSeconds(NOW)).isEqualTo(28 * 86400);
    assertThat(Policy.parse("p", "quota 50/day@Europe/Paris").limit())
        .isEqualTo(Limit.quota(50, Limit.Period.DAY, ZoneId.of("Europe/Paris")));
  }

  @Test
  void badTextSaysWhatAGoodOneLooksLike() {
    assertThatThrownBy(() -> Policy.parse("p", "100/1m")).hasMessageContaining("names no algorithm")
        .hasMessageContaining("token-bucket 100/1m");
    assertThatThrownBy(() -> Policy.parse("p", "bucket 100/1m")).hasMessageContaining("unknown algorithm 'bucket'");
    assertThatThrownBy(() -> Policy.parse("p", "token-bucket 100/1w")).hasMessageContaining("ms, s, m, h, d");
    assertThatThrownBy(() -> Policy.parse("p", "token-bucket 0/1m")).hasMessageContaining("capacity must be positive");
    assertThatThrownBy(() -> Policy.parse("p", "fixed-window 2:1/1m")).hasMessageContaining("only token-bucket and gcra");
    assertThatThrownBy(() -> Policy.parse("p", "gcra 30/60s")).hasMessageContaining("needs a burst");
    assertThatThrownBy(() -> Policy.parse("p", "token-bucket 99999999999999999999/1m")).hasMessageContaining("too large");
    assertThatThrownBy(() -> Policy.parse("p", "quota 5/day@Mars/Olympus")).hasMessageContaining("unknown time zone");
    assertThatThrownBy(() -> Policy.parse("p", "quota 5/week")).hasMessageContaining("ALLOWANCE/day");
    assertThatThrownBy(() -> Policy.parse("p q", "token-bucket 1/1s")).hasMessageContaining("policy id 'p q'");
    assertThatThrownBy(() -> Policy.parse("p", " ")).hasMessageContaining("has no limit");
  }

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
