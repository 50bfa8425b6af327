package dev.tally.spi;

/**
 * What a {@link ConcurrencyCall} answers.
 *
 * @param ok for {@code ACQUIRE}: granted; for {@code RENEW}: the lease was live and now expires at
 *     {@code expiresAt}; for {@code RELEASE}: the lease was live and its permits are back (false:
 *     it was released or had expired already, which is harmless); for {@code PEEK}: true
 * @param token the granted (or renewed, or released) lease's fencing token; 0 when not {@code ok}
 * @param expiresAt when the lease expires (epoch nanoseconds on the store's clock); 0 when not {@code ok}
 * @param inUse the permits held by unexpired leases after the step
 * @param fencing the largest fencing token ever granted on the key (0: none yet)
 * @param earliestExpiry when the first unexpired lease expires, 0 when none is held: a refused
 *     acquirer need not look again after that unless a holder releases
 * @param now the store's clock when the step was decided
 */
public record ConcurrencyResult(boolean ok, long token, long expiresAt, long inUse, long fencing,
    long earliestExpiry, long now) {}
