package dev.tally.server.app;

import dev.tally.Lease;
import java.time.Instant;

/**
 * A lease of a concurrency limit, as granted or renewed: {@code weight} is 0 after a renewal,
 * whose store step does not say it.
 */
public record ConcurrencyLease(String name, String id, long fencingToken, long weight,
    Instant expiresAt, long expiresInMillis) {

  static ConcurrencyLease of(String name, Lease lease) {
    Instant at = lease.expiresAt();
    // expiresAt is on the store's clock; the millis left are read against this server's
    long left = Math.max(0, at.toEpochMilli() - System.currentTimeMillis());
    return new ConcurrencyLease(name, lease.id(), lease.fencingToken(), lease.weight(), at, left);
  }
}
