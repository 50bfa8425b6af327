package dev.tally.server.app;

/** A bounded increment's answer: the value, and whether the increment was applied or refused. */
public record BoundedValue(String key, long value, boolean applied) {}
