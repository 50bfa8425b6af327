package dev.tally.server.ratelimit;

import java.util.Objects;

/**
 * One entry of a descriptor: {@code ("remote_address", "10.0.0.1")}. Envoy sends descriptors as
 * lists of these, and the rules are matched against them one level per entry. A value may be empty.
 */
public record Entry(String key, String value) {
  public Entry {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
  }

  @Override
  public String toString() {
    return key + "=" + value;
  }
}
