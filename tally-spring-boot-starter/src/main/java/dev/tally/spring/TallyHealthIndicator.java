package dev.tally.spring;

import dev.tally.FailurePolicy;
import dev.tally.StoreException;
import dev.tally.Tally;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * The Actuator health of the store: {@code UP} if a read of one key answers. While the store
 * does not answer, the rules keep answering by their failure policy, so the application serves:
 * the indicator then reports {@code tally.health.outage-status} ({@code UNKNOWN} by default,
 * which the overall status ranks below {@code UP}, so {@code /actuator/health} stays UP) with
 * the outage in its details: {@code reachable: false}, the circuit breaker's state and the
 * failure. {@code DOWN} when every rule is fail-closed, since then every limited request is
 * refused. The read never creates the key, and ignores the counters' failure policy (a
 * fail-open group would otherwise report a dead store as up); with the breaker open it fails at
 * once, so the check never waits out the store's timeout.
 */
public class TallyHealthIndicator implements HealthIndicator {
  /** The key read; it need not exist. */
  static final String PROBE_KEY = "tally.healthz";

  private final Tally tally;
  private final Status outage;

  public TallyHealthIndicator(Tally tally) {
    this(tally, Status.UNKNOWN.getCode(), false);
  }

  /**
   * @param outageStatus the status code to report while the store does not answer
   * @param everyRuleFailsClosed whether an outage refuses every limited request (then DOWN)
   */
  public TallyHealthIndicator(Tally tally, String outageStatus, boolean everyRuleFailsClosed) {
    this.tally = tally;
    if (outageStatus == null || outageStatus.isBlank()) {
      throw new IllegalArgumentException("tally.health.outage-status is empty; use UNKNOWN (the default) or DOWN");
    }
    this.outage = everyRuleFailsClosed ? Status.DOWN : new Status(outageStatus.strip().toUpperCase(java.util.Locale.ROOT));
  }

  @Override
  public Health health() {
    String store = scheme(tally.uri());
    long start = System.nanoTime();
    try {
      tally.counters().withFailurePolicy(FailurePolicy.THROW).getDouble(PROBE_KEY);
      return Health.up().withDetail("store", store).withDetail("reachable", true)
          .withDetail("circuit", tally.circuitState().name())
          .withDetail("latencyMicros", (System.nanoTime() - start) / 1000).build();
    } catch (StoreException e) {
      return Health.status(outage).withDetail("store", store).withDetail("reachable", false)
          .withDetail("opened", tally.storeOpen())
          .withDetail("circuit", tally.circuitState().name())
          .withDetail("error", e.getClass().getSimpleName() + ": " + e.getMessage()).build();
    }
  }

  /** The URI's scheme only: the rest may hold a password. */
  static String scheme(String uri) {
    int colon = uri.indexOf(':');
    return colon < 0 ? uri : uri.substring(0, colon);
  }
}
