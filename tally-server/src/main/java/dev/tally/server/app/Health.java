package dev.tally.server.app;

/** A probe of the store: how long one read took, and its failure if it failed. */
public record Health(String store, long latencyMicros, Throwable failure) {}
