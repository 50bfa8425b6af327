package dev.tally.redis;

import dev.tally.StoreException;
import java.time.Instant;

/**
 * The script decided at an instant the client's calendar boundaries for a quota do not cover:
 * the client computes them around its own clock (Lua knows no time zones), and they reach from
 * the day (month) before to the one after next. The instant is the Redis server's time, or a
 * stored window's start when that is later (the state never moves back), so a client whose clock
 * is more than a day behind meets this. {@link AsyncRedisStore} sends the call once more with
 * boundaries around {@link #at}; only if that fails too does the caller see it.
 */
final class ClockSkewException extends StoreException {
  private static final long serialVersionUID = 1L;

  /** The instant the script decided at, epoch nanoseconds. */
  final long at;

  ClockSkewException(String key, long at, Throwable cause) {
    super("limiter '" + key + "': its quota was decided at " + Instant.ofEpochSecond(0, at) + " (the Redis"
        + " server's time, or a stored window's start if later), more than a day from this client's clock,"
        + " so the client's calendar boundaries for the quota do not cover it; fix the clocks", cause);
    this.at = at;
  }
}
