package dev.tally.server.app;

import dev.tally.Durations;
import java.time.Duration;

/** The time a live counter has left, or null if it never expires. */
public record CounterTtl(String key, Duration ttl) {
  /**
   * The time left as Tally writes durations, or null for never. Whole seconds read better
   * ("40d", not "39d23h59m59.998s"), rounded up; under a second it stays exact.
   */
  public String text() {
    if (ttl == null) {
      return null;
    }
    long ms = ttl.toMillis();
    return Durations.format(ms >= 1000 ? Duration.ofSeconds((ms + 999) / 1000) : ttl);
  }
}
