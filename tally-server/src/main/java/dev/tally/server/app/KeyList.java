package dev.tally.server.app;

import java.util.List;

/** Live keys starting with a prefix, sorted; {@code truncated} if more matched than listed. */
public record KeyList(String prefix, List<String> keys, boolean truncated) {}
