package dev.tally.redis;

import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import java.util.List;
import java.util.Locale;

/**
 * The arguments of one call of {@code concurrency.lua}, and its reply as a
 * {@link ConcurrencyResult}; the script's header describes both. Instants cross as seconds and
 * nanoseconds, since Lua's numbers are doubles.
 */
final class ConcurrencyScript {
  static final Script SCRIPT = Script.load("concurrency.lua");

  /** Weights, permits and tokens must stay exact in Lua's doubles. */
  static final long MAX_PERMITS = 1L << 53;

  private static final long GIGA = 1_000_000_000L;

  private ConcurrencyScript() {}

  /**
   * {@code ARGV} for one call.
   *
   * @param now the caller's clock, sent only when {@code passClock} (else the script reads {@code TIME})
   */
  static String[] args(ConcurrencyCall call, long now, boolean passClock) {
    if (call.maxPermits() >= MAX_PERMITS) {
      throw new IllegalArgumentException("maxPermits on Redis must be below 2^53, not " + call.maxPermits());
    }
    return new String[] {
        call.operation().name().toLowerCase(Locale.ROOT),
        Long.toString(call.maxPermits()),
        call.token() == 0 ? "" : Long.toString(call.token()),
        Long.toHexString(call.nonce()),
        Long.toString(call.weight()),
        Long.toString(call.ttlNanos() / GIGA),
        Long.toString(call.ttlNanos() % GIGA),
        passClock ? instant(now) : "",
        Long.toString(call.queueTtlNanos() / GIGA),
        Long.toString(call.queueTtlNanos() % GIGA)};
  }

  private static String instant(long nanos) {
    return Math.floorDiv(nanos, GIGA) + " " + Math.floorMod(nanos, GIGA);
  }

  static ConcurrencyResult result(List<Object> reply) {
    return new ConcurrencyResult(number(reply.get(0)) == 1, number(reply.get(1)),
        nanos(reply.get(2), reply.get(3)), number(reply.get(4)), number(reply.get(5)),
        nanos(reply.get(6), reply.get(7)), nanos(reply.get(8), reply.get(9)));
  }

  private static long nanos(Object seconds, Object nanos) {
    long s = number(seconds);
    long n = number(nanos);
    return s == 0 && n == 0 ? 0 : s * GIGA + n;
  }

  private static long number(Object value) {
    return value instanceof Long l ? l : Long.parseLong((String) value);
  }
}
