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

  @Override
  public String toString() {
    return string;
  }
}
