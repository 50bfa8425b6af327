package dev.tally.server.http;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Meters by route template, method and status, found without building a key per request: a map
 * by template (constant strings, their hashes cached), then a short array searched in order,
 * since a route sees few methods and statuses. Adding is rare and copies the array.
 *
 * @param <M> the meter
 */
final class Meters<M> {
  private static final Entry<?>[] NONE = new Entry<?>[0];

  private record Entry<M>(String method, int status, M meter) {}

  private final ConcurrentHashMap<String, Entry<M>[]> byRoute = new ConcurrentHashMap<>();

  M get(String route, String method, int status) {
    Entry<M>[] entries = byRoute.get(route);
    if (entries != null) {
      for (Entry<M> e : entries) {
        if (e.status == status && e.method.equals(method)) {
          return e.meter;
        }
      }
    }
    return null;
  }

  /** Adds {@code meter} unless one is there already; returns the one kept. */
  @SuppressWarnings("unchecked") // arrays of a generic record are made as Entry<?>[]
  synchronized M add(String route, String method, int status, M meter) {
    M known = get(route, method, status);
    if (known != null) {
      return known;
    }
    Entry<M>[] old = byRoute.getOrDefault(route, (Entry<M>[]) NONE);
    Entry<M>[] grown = Arrays.copyOf(old, old.length + 1);
    grown[old.length] = new Entry<>(method, status, meter);
    byRoute.put(route, grown);
    return meter;
  }
}
