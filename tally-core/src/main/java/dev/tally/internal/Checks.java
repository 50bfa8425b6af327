package dev.tally.internal;

import dev.tally.Counters;
import dev.tally.spi.Store;
import java.time.Duration;

/**
 * Input validation shared by every entry point, so that bad input is refused the same way on
 * every store and before any I/O. Messages say what was wrong and what to do instead.
 */
final class Checks {
  private Checks() {}

  /** A group's key prefix: the group name and a colon, or nothing for the root group. */
  static String groupPrefix(String group) {
    if (group == null || group.isEmpty()) {
      throw new IllegalArgumentException(
          "group name must be a non-empty string such as \"views\"; use counters() for no prefix");
    }
    return group + ":";
  }

  /**
   * The full key: prefix + key, checked to be non-empty valid UTF-8 of at most
   * {@link Counters#MAX_KEY_BYTES} bytes. Allocates nothing for the root group.
   */
  static String key(String prefix, String key) {
    if (key == null) {
      throw new IllegalArgumentException("key must not be null");
    }
    if (key.isEmpty()) {
      throw new IllegalArgumentException("key must not be empty");
    }
    String full = prefix.isEmpty() ? key : prefix.concat(key);
    checkBytes(full, "key");
    return full;
  }

  /** A prefix for {@code keys(prefix)}: may be empty, must be valid and not too long. */
  static String prefix(String groupPrefix, String prefix) {
    if (prefix == null) {
      throw new IllegalArgumentException("prefix must not be null; use \"\" for every key");
    }
    String full = groupPrefix.isEmpty() ? prefix : groupPrefix.concat(prefix);
    checkBytes(full, "prefix");
    return full;
  }

  private static void checkBytes(String s, String what) {
    int n = s.length();
    // The common case, checked first: a key short enough that even at 3 bytes a char it fits,
    // with no char from the surrogate range up (ASCII, Latin, CJK...), is valid without counting.
    if (n <= Counters.MAX_KEY_BYTES / 3) {
      int i = 0;
      while (i < n && s.charAt(i) < Character.MIN_SURROGATE) {
        i++;
      }
      if (i == n) {
        return;
      }
    }
    int bytes = 0;
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new IllegalArgumentException(what + " '" + abbreviate(s) + "' has an unpaired UTF-16"
            + " surrogate at index " + i + " and cannot be encoded as UTF-8");
      } else {
        bytes += 3;
      }
    }
    if (bytes > Counters.MAX_KEY_BYTES) {
      throw new IllegalArgumentException(what + " '" + abbreviate(s) + "' is " + bytes
          + " bytes in UTF-8 (with any group prefix); the limit is " + Counters.MAX_KEY_BYTES
          + ". Shorten it, or hash the variable part");
    }
  }

  static double finite(double value, String what) {
    if (!Double.isFinite(value)) {
      throw new IllegalArgumentException(what + " must be a finite number, not " + value);
    }
    return value;
  }

  /** A ttl as nanoseconds: {@link Store#NO_TTL} for null, otherwise positive. */
  static long ttl(Duration ttl) {
    if (ttl == null) {
      return Store.NO_TTL;
    }
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("ttl must be positive, not " + ttl
          + "; pass null for a counter that never expires, or delete it");
    }
    // Saturate far beyond any real ttl so now + ttl cannot overflow.
    return ttl.compareTo(Counters.MAX_TTL) >= 0 ? Counters.MAX_TTL.toNanos() : ttl.toNanos();
  }

  static String abbreviate(String s) {
    return s.length() <= 64 ? s : s.substring(0, 60) + "…";
  }
}
