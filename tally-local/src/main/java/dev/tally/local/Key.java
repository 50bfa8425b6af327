package dev.tally.local;

import java.nio.charset.StandardCharsets;

/** A key as the table sees it: its UTF-8 bytes and their hash. */
final class Key {
  final String string;
  final byte[] bytes;
  final long hash;

  Key(String string) {
    this.string = string;
    this.bytes = string.getBytes(StandardCharsets.UTF_8);
    this.hash = Hashing.key(bytes, 0, bytes.length);
  }

  @Override
  public String toString() {
    return string;
  }
}
