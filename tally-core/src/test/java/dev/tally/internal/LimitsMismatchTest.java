package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.TallyMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How a mismatch of a limiter's limits is reported: every decision counted, each kind of mismatch
 * logged once, whichever key or handle meets it. The rule itself is the kit's (LimiterContract).
 */
class LimitsMismatchTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private double counted(String outcome) {
    var c = registry.find("tally.limiter.version.mismatch").tags("outcome", outcome).counter();
    return c == null ? 0 : c.count();
  }

  private static int linesLogged(Tally tally) {
    return ((TallyRuntime) tally).mismatches().linesLogged();
  }

  @Test
  void aMismatchIsCountedOnEveryDecisionAndLoggedOncePerKind() {
    TallyMetrics metrics = TallyMetrics.of(registry, "mem:");
    try (Tally tally = Tally.builder("mem:").listener(metrics).build()) {
      Limit two = Limit.fixedWindow(2, Duration.ofMinutes(1));
      Limit five = Limit.fixedWindow(5, Duration.ofMinutes(1));
      for (String user : List.of("a", "b", "c")) {
        assertThat(tally.limiter("api:" + user, two).withVersion(1).tryAcquire()).isTrue();
      }
      for (String user : List.of("a", "b", "c")) {
        Decision d = tally.limiter("api:" + user, five).withVersion(2).decide(1);
        assertThat(d.remaining()).isEqualTo(3);
      }
      assertThat(counted("upgraded")).isEqualTo(3);
      assertThat(linesLogged(tally)).as("one line for the three keys").isEqualTo(1);

      RateLimiter old = tally.limiter("api:a", two).withVersion(1);
      assertThat(old.decide(1).limit()).isEqualTo(5);
      assertThat(old.tryAcquire()).as("the memory store's shortcut reports too").isTrue();
      assertThat(counted("adopted")).isEqualTo(2);
      assertThat(linesLogged(tally)).isEqualTo(2);

      assertThat(tally.limiter("api:b", Limit.fixedWindow(9, Duration.ofMinutes(1))).withVersion(2).decide(0).limit())
          .isEqualTo(5);
      assertThat(counted("conflict")).isEqualTo(1);
      assertThat(linesLogged(tally)).isEqualTo(3);
    }
  }

  @Test
  void withoutVersionsTheStoredLimitsApplyAsBeforeAndTheMismatchIsReported() {
    List<Decision.Mismatch> heard = new ArrayList<>();
    TallyListener listener = new TallyListener() {
      @Override
      public void onLimitsMismatch(String key, Decision.Mismatch mismatch, List<Limit> limits, long version,
          long storedVersion) {
        heard.add(mismatch);
      }
    };
    try (Tally tally = Tally.builder("mem:").listener(listener).build()) {
      RateLimiter first = tally.limiter("k", Limit.tokenBucket(2, Duration.ofMinutes(1)));
      assertThat(first.tryAcquire()).isTrue();
      RateLimiter other = tally.limiter("k", Limit.tokenBucket(5, Duration.ofMinutes(1)));
      assertThat(other.version()).isZero();
      assertThat(other.tryAcquire()).isTrue();
      assertThat(other.tryAcquire()).as("the stored 2 per minute").isFalse();
      assertThat(first.tryAcquire()).isFalse();
    }
    assertThat(heard).containsExactly(Decision.Mismatch.CONFLICT, Decision.Mismatch.CONFLICT);
  }
}
