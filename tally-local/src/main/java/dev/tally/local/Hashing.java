package dev.tally.local;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The key hash and the slot checksum. Both are part of the file format: changing either needs a
 * new format version. Keys are hashed a word at a time with the MurmurHash3 finalizer as the
 * mixer, which is quick for the short keys counters use and spreads every input bit over the
 * 64 output bits (the table takes its page from some bits and its start slot from others).
 */
final class Hashing {
  private Hashing() {}

  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long GOLDEN = 0x9E3779B97F4A7C15L;

  /** MurmurHash3's 64-bit finalizer: a bijection that avalanches. */
  static long mix(long h) {
    h ^= h >>> 33;
    h *= 0xFF51AFD7ED558CCDL;
    h ^= h >>> 33;
    h *= 0xC4CEB9FE1A85EC53L;
    h ^= h >>> 33;
    return h;
  }

  static long key(byte[] b, int off, int len) {
    long h = 0x243F6A8885A308D3L ^ (len * GOLDEN);
    int i = 0;
    for (; i + 8 <= len; i += 8) {
      h = Long.rotateLeft(h ^ mix((long) LONG_LE.get(b, off + i)), 29) * GOLDEN;
    }
    long tail = 0;
    for (int j = len - 1; j >= i; j--) {
      tail = (tail << 8) | (b[off + j] & 0xFF);
    }
    return mix(h ^ mix(tail ^ 0x5851F42D4C957F2DL));
  }

  /** The checksum of a slot's fields that change only under its lock. */
  static int slot(long mask, long expiry, long keyHash, int keyRef, int flags) {
    long h = mix(mask ^ 0x6A09E667F3BCC908L);
    h = mix(h ^ expiry);
    h = mix(h ^ keyHash);
    h = mix(h ^ ((keyRef & 0xFFFF_FFFFL) | ((long) flags << 32)));
    return (int) (h >>> 32);
  }

  /** The check word of a rate limiter's state record. */
  static long record(long keyHash, long lastNow, long[] words) {
    long h = mix(keyHash ^ 0x3C6EF372FE94F82BL);
    h = mix(h ^ lastNow);
    for (long w : words) {
      h = mix(h ^ w);
    }
    return mix(h ^ words.length);
  }

  /** The check half of the heap top word: 32 bits that any change of the top's 32 bits upsets. */
  static int heapTop(int ref) {
    return (int) (mix((ref & 0xFFFF_FFFFL) ^ 0xA54FF53A5F1D36F1L) >>> 32);
  }

  static long words(long... words) {
    long h = 0xBB67AE8584CAA73BL;
    for (long w : words) {
      h = mix(h ^ w);
    }
    return h;
  }
}
