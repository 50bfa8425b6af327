package dev.tally.spring;

/**
 * Just enough of a JSON writer for problem bodies: the starter must not pick a Jackson major
 * version for the application (Spring Boot 4 brings Jackson 3, many applications still use 2).
 */
final class Json {
  private final StringBuilder b = new StringBuilder("{");
  private boolean first = true;
  private boolean firstElement;

  Json name(String name) {
    if (!first) {
      b.append(',');
    }
    first = false;
    string(name);
    b.append(':');
    return this;
  }

  Json field(String name, String value) {
    name(name);
    if (value == null) {
      b.append("null");
    } else {
      string(value);
    }
    return this;
  }

  Json field(String name, long value) {
    name(name).b.append(value);
    return this;
  }

  Json field(String name, boolean value) {
    name(name).b.append(value);
    return this;
  }

  Json nullField(String name) {
    name(name).b.append("null");
    return this;
  }

  Json beginArray() {
    b.append('[');
    firstElement = true;
    return this;
  }

  Json element(String value) {
    if (!firstElement) {
      b.append(',');
    }
    firstElement = false;
    string(value);
    return this;
  }

  Json endArray() {
    b.append(']');
    return this;
  }

  String end() {
    return b.append('}').toString();
  }

  private void string(String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    b.append('"');
  }
}
