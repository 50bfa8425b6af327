package dev.tally.spring;

import dev.tally.FailurePolicy;
import dev.tally.StoreException;
import dev.tally.Tally;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The Actuator health of the store: {@code UP} if a read of one key answers, {@code DOWN} with
 * the failure if not. The read never creates the key, and ignores the counters' failure policy
 * (a fail-open group would otherwise report a dead store as up).
 */
public class TallyHealthIndicator implements HealthIndicator {
  /** The key read; it need not exist. */
  static final String PROBE_KEY = "tally.healthz";

  private final Tally tally;

  public TallyHealthIndicator(Tally tally) {
    this.tally = tally;
  }

  @Override
  public Health health() {
    String store = scheme(tally.uri());
    long start = System.nanoTime();
    try {
      tally.counters().withFailurePolicy(FailurePolicy.THROW).getDouble(PROBE_KEY);
      return Health.up().withDetail("store", store)
          .withDetail("latencyMicros", (System.nanoTime() - start) / 1000).build();
    } catch (StoreException e) {
      return Health.down(e).withDetail("store", store).build();
    }
  }

  /** The URI's scheme only: the rest may hold a password. */
  static String scheme(String uri) {
    int colon = uri.indexOf(':');
    return colon < 0 ? uri : uri.substring(0, colon);
  }
}
