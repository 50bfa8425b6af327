package dev.tally.server.app;

/** The outcome of an add: whether the counter was missing and is now set. */
public record Added(String key, boolean added) {}
