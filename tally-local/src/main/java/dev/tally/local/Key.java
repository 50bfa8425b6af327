package dev.tally.local;

import java.nio.charset.StandardCharsets;

/** A key as the table sees it: its UTF-8 bytes and their hash. */
final class Key {
  final String string;
  final byte[] bytes;
  final long hash;
  /** An operation id's key ({@link OperationIds}), which no counter or limiter name can equal. */
  final boolean operationId;

  Key(String string) {
    this(string, string.getBytes(StandardCharsets.UTF_8), false);
  }

  Key(String string, byte[] bytes, boolean operationId) {
    this.string = string;
    this.bytes = bytes;
    this.hash = Hashing.key(bytes, 0, bytes.length);
    this.operationId = operationId;
  }

  /**
   * The key whose UTF-8 bytes (or, for an operation id, whose bytes of another form) are
   * {@code bytes}, as read back from a key record.
   */
  static Key ofBytes(byte[] bytes) {
    return OperationIds.isIdKey(bytes)
        ? new Key("operation id " + new String(bytes, 1, bytes.length - 1, StandardCharsets.US_ASCII), bytes, true)
        : new Key(new String(bytes, StandardCharsets.UTF_8), bytes, false);
  }

  @Override
  public String toString() {
    return string;
  }
}
