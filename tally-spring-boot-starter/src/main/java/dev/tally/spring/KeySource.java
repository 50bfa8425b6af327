package dev.tally.spring;

import java.util.Locale;

/**
 * What a filter rule limits requests by, from its {@code key} property: {@code remote-address},
 * {@code principal}, {@code header:NAME}, {@code path-variable:NAME}, {@code global} or
 * {@code expression:SPEL}.
 */
@FunctionalInterface
interface KeySource {
  String GLOBAL_KEY = "global";

  String keyOf(RateLimitRequest request);

  /**
   * Parses a {@code key} property.
   *
   * @throws IllegalArgumentException listing the forms
   */
  static KeySource parse(String text, KeyExpressions expressions, String where) {
    String t = text == null ? "remote-address" : text.strip();
    int colon = t.indexOf(':');
    String kind = (colon < 0 ? t : t.substring(0, colon)).toLowerCase(Locale.ROOT);
    String arg = colon < 0 ? "" : t.substring(colon + 1).strip();
    KeySource source = switch (kind) {
      case "remote-address" -> RateLimitRequest::getRemoteAddress;
      case "principal" -> RateLimitRequest::getPrincipal;
      case "global" -> r -> GLOBAL_KEY;
      case "header" -> arg.isEmpty() ? null : r -> r.header(arg);
      case "path-variable" -> arg.isEmpty() ? null : r -> r.pathVariable(arg);
      case "expression" -> {
        if (arg.isEmpty()) {
          yield null;
        }
        expressions.parse(arg, where);
        yield r -> expressions.evaluate(arg, r);
      }
      default -> null;
    };
    if (source == null) {
      throw new IllegalArgumentException(where + ": key '" + t + "' is not one of remote-address,"
          + " principal, global, header:NAME, path-variable:NAME, expression:SPEL");
    }
    return source;
  }
}
