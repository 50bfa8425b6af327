package dev.tally.server.app;

/** A counter that existed and is deleted. */
public record Deleted(String key) {}
