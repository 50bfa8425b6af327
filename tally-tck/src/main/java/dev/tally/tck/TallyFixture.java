package dev.tally.tck;

import dev.tally.Counters;
import dev.tally.Tally;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What every suite of the kit needs from a store: a way to open it on a test clock, and a way
 * to let time pass. A store module extends each suite and implements {@link #open}; a store
 * whose expiry runs on a server clock that cannot be driven (Redis' key expiry) overrides
 * {@link #advance} to sleep.
 *
 * <p>Each test works in a fresh, uniquely named group, so suites can share one server without
 * seeing each other's keys. {@link #counters} is that group.
 */
public abstract class TallyFixture {
  protected ManualTimeSource clock;
  protected Tally tally;
  /** A group unique to this test. */
  protected Counters counters;

  /** Opens the store under test on {@code clock}; a new instance on each call. */
  protected abstract Tally open(ManualTimeSource clock);

  /** Lets {@code d} pass for the store: advances the manual clock by default. */
  protected void advance(Duration d) {
    clock.advance(d);
  }

  @BeforeEach
  void openStore() {
    clock = new ManualTimeSource();
    tally = open(clock);
    counters = tally.counters(uniqueGroup());
  }

  @AfterEach
  void closeStore() {
    if (tally != null) {
      tally.close();
    }
  }

  /** A group name no other test uses. */
  protected static String uniqueGroup() {
    return "tck-" + UUID.randomUUID().toString().substring(0, 8);
  }
}
