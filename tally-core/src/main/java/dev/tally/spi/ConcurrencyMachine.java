package dev.tally.spi;

import java.util.Arrays;

/**
 * The state machine of a concurrency limit: every store runs {@link #apply} (or its port, for a
 * store that runs its own language, like Redis' {@code concurrency.lua}) atomically on a key's
 * {@link ConcurrencyRecord}: read it, apply, write {@link Outcome#next()} if
 * {@link Outcome#changed()}, as one step with respect to every other caller of the key.
 *
 * <h2>The rules</h2>
 *
 * <ul>
 *   <li><b>Time never runs back.</b> A step is decided at {@code max(now, decidedAt)}, so a caller
 *       whose clock lags cannot revive a lease another caller saw expire.
 *   <li><b>Expiry frees permits by itself.</b> A lease whose {@code expiresAt <= now} holds
 *       nothing: every step drops such leases first. A holder that died gives its permits back
 *       within its ttl, with no one to clean up after it.
 *   <li><b>No over-grant.</b> An acquire is granted only if the weights of the unexpired leases
 *       plus its own stay within {@code maxPermits}; the check and the grant are this one step.
 *   <li><b>Fencing.</b> Each grant takes {@code fencing + 1} as its token and stores it as the new
 *       {@code fencing}; the counter is never reset, so tokens strictly increase per key for ever
 *       and a resource that keeps the highest token it has seen can refuse a stale holder.
 *   <li><b>Retries.</b> An acquire whose nonce is already a live lease's returns that lease
 *       unchanged: a retried acquire whose first reply was lost takes no second permit. Renewal of
 *       a live lease is idempotent in effect (it sets, not adds), and release of a lease not held
 *       is harmless, so neither needs an operation id.
 *   <li><b>Dead leases stay dead.</b> Renewing a released or expired lease is refused: its permits
 *       may belong to someone else already.
 * </ul>
 */
public final class ConcurrencyMachine {
  private ConcurrencyMachine() {}

  /**
   * What a step did.
   *
   * @param next the record to store
   * @param result the answer for the caller
   * @param changed whether {@code next} differs from the stored record (a store may skip the write)
   */
  public record Outcome(ConcurrencyRecord next, ConcurrencyResult result, boolean changed) {}

  /**
   * Runs one step. Pure: reads no clock and no store.
   *
   * @param stored the stored record, or null if there is none
   * @param now the store's clock, in epoch nanoseconds
   */
  public static Outcome apply(ConcurrencyRecord stored, long now, ConcurrencyCall call) {
    ConcurrencyRecord s = stored == null ? ConcurrencyRecord.EMPTY : stored;
    long at = Math.max(now, s.decidedAt());
    long[] live = dropExpired(s.leases(), at);
    boolean changed = stored == null ? call.operation() == ConcurrencyOperation.ACQUIRE : live.length != s.leases().length;
    long fencing = s.fencing();
    long inUse = inUse(live);
    int found = find(live, call.token(), call.nonce(), call.operation() == ConcurrencyOperation.ACQUIRE);
    boolean ok;
    long token = 0;
    long expiresAt = 0;
    switch (call.operation()) {
      case ACQUIRE -> {
        if (found >= 0) { // a retry of an acquire that was granted
          ok = true;
          token = live[found];
          expiresAt = live[found + 3];
        } else if (call.weight() <= call.maxPermits() - inUse) {
          ok = true;
          token = Math.addExact(fencing, 1);
          fencing = token;
          expiresAt = saturatedAdd(at, call.ttlNanos());
          live = Arrays.copyOf(live, live.length + ConcurrencyRecord.LEASE_WORDS);
          int i = live.length - ConcurrencyRecord.LEASE_WORDS;
          live[i] = token;
          live[i + 1] = call.nonce();
          live[i + 2] = call.weight();
          live[i + 3] = expiresAt;
          inUse += call.weight();
          changed = true;
        } else {
          ok = false;
        }
      }
      case RENEW -> {
        ok = found >= 0;
        if (ok) {
          token = live[found];
          expiresAt = saturatedAdd(at, call.ttlNanos());
          if (live[found + 3] != expiresAt) {
            live = live == s.leases() ? live.clone() : live;
            live[found + 3] = expiresAt;
            changed = true;
          }
        }
      }
      case RELEASE -> {
        ok = found >= 0;
        if (ok) {
          token = live[found];
          expiresAt = live[found + 3];
          inUse -= live[found + 2];
          long[] rest = new long[live.length - ConcurrencyRecord.LEASE_WORDS];
          System.arraycopy(live, 0, rest, 0, found);
          System.arraycopy(live, found + ConcurrencyRecord.LEASE_WORDS, rest, found, rest.length - found);
          live = rest;
          changed = true;
        }
      }
      case PEEK -> ok = true;
      default -> throw new IllegalArgumentException("unknown operation " + call.operation());
    }
    ConcurrencyRecord next = changed ? new ConcurrencyRecord(at, fencing, live) : s;
    return new Outcome(next, new ConcurrencyResult(ok, token, expiresAt, inUse, fencing, earliest(live), at), changed);
  }

  private static long[] dropExpired(long[] leases, long now) {
    int kept = 0;
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      if (leases[i + 3] > now) {
        kept++;
      }
    }
    if (kept * ConcurrencyRecord.LEASE_WORDS == leases.length) {
      return leases;
    }
    long[] out = new long[kept * ConcurrencyRecord.LEASE_WORDS];
    int o = 0;
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      if (leases[i + 3] > now) {
        System.arraycopy(leases, i, out, o, ConcurrencyRecord.LEASE_WORDS);
        o += ConcurrencyRecord.LEASE_WORDS;
      }
    }
    return out;
  }

  private static long inUse(long[] leases) {
    long sum = 0;
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      sum += leases[i + 2];
    }
    return sum;
  }

  private static long earliest(long[] leases) {
    long min = 0;
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      if (min == 0 || leases[i + 3] < min) {
        min = leases[i + 3];
      }
    }
    return min;
  }

  /** The lease's offset, matched by nonce alone for an acquire, else by token and nonce; -1 if none. */
  private static int find(long[] leases, long token, long nonce, boolean byNonce) {
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      if (leases[i + 1] == nonce && (byNonce || leases[i] == token)) {
        return i;
      }
    }
    return -1;
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
