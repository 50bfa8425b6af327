package dev.tally.server.app;

import java.util.List;

/**
 * Live keys starting with a prefix, sorted; {@code truncated} if more matched than listed, and
 * then {@code next}, the last key listed, to pass as {@code after} for the following page (else
 * null).
 */
public record KeyList(String prefix, List<String> keys, boolean truncated, String next) {}
