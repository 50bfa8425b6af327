package dev.tally.server.app;

/** A release: {@code released} is false if the lease had been released or had expired already. */
public record LeaseReleased(String name, String id, boolean released) {}
