package dev.tally.server.app;

/** A counter's value: a {@code Long}, or a {@code Double} for a floating counter. */
public record CounterValue(String key, Number value) {}
