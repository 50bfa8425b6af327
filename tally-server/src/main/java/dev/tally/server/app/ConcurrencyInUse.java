package dev.tally.server.app;

/** The permits held by unexpired leases of a concurrency limit. */
public record ConcurrencyInUse(String name, long maxPermits, long inUse) {}
