package dev.tally.server.http;

import dev.tally.Bounds;
import dev.tally.server.app.RequestException;

/** The {@code min}, {@code max} and {@code onBound} fields of an increment's body. */
final class BoundsField {
  private BoundsField() {}

  static boolean present(Body b) {
    return b.has("min") || b.has("max") || b.has("onBound");
  }

  static Bounds of(Body b) {
    if (b.bool("mustExist", false)) {
      throw new RequestException("mustExist cannot be combined with min, max or onBound");
    }
    if (!b.has("min") && !b.has("max")) {
      throw new RequestException("onBound needs a bound: add \"min\", \"max\" or both");
    }
    String on = b.string("onBound");
    Bounds bounds = Bounds.between(b.integer("min", Long.MIN_VALUE), b.integer("max", Long.MAX_VALUE));
    if (on == null || on.equals("refuse")) {
      return bounds;
    }
    if (on.equals("saturate")) {
      return bounds.saturate();
    }
    throw new RequestException("'onBound' must be \"refuse\" or \"saturate\", not \"" + on + "\"");
  }
}
