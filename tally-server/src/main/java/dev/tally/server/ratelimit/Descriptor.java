package dev.tally.server.ratelimit;

import java.util.List;
import java.util.stream.Collectors;

/**
 * One descriptor of a request: its entries, and optionally a limit the caller sends in place of
 * the rules' (Envoy's {@code RateLimitDescriptor.limit}) and its own cost (Envoy's
 * {@code RateLimitDescriptor.hits_addend}: 0 checks without taking anything; null takes the
 * request's).
 */
public record Descriptor(List<Entry> entries, LimitOverride override, Long hitsAddend) {
  public Descriptor {
    entries = List.copyOf(entries);
    if (hitsAddend != null && hitsAddend < 0) {
      throw new IllegalArgumentException("a descriptor's hits_addend must be zero or more, not " + hitsAddend);
    }
  }

  /** A descriptor that takes the request's {@code hits_addend}. */
  public Descriptor(List<Entry> entries, LimitOverride override) {
    this(entries, override, null);
  }

  public static Descriptor of(Entry... entries) {
    return new Descriptor(List.of(entries), null);
  }

  /**
   * A limit Envoy sends with a descriptor ({@code limit: {requests_per_unit, unit}} in its route
   * configuration): envoyproxy/ratelimit applies it instead of the rules, and so does Tally. The
   * unit is null if Envoy sent one Tally does not know.
   */
  public record LimitOverride(long requestsPerUnit, Unit unit) {}

  @Override
  public String toString() {
    return entries.stream().map(Entry::toString).collect(Collectors.joining(", ", "(", ")"));
  }
}
