package dev.tally.spi;

import dev.tally.Limit;
import dev.tally.StoreException;
import java.util.Arrays;

/**
 * A rate limiter's stored state, as every store keeps it: the instant it was last decided at and
 * the state machine's words, under a format {@link #VERSION}.
 *
 * <pre>
 *   words: 6 longs per limit, in the limiter's order
 *   +-----+------------+------------+---------+---------+---------+
 *   | tag | parameter0 | parameter1 | state0  | state1  | state2  |   tag 0: no limit here
 *   +-----+------------+------------+---------+---------+---------+
 *
 *   tag: bits 0-3   the limit's kind, Limit.Kind.tag()
 *        bits 4-7   a bucket's warm-up cold factor, 2 to 15; 0 for none ({@link #limitTag})
 *        bits 8-52  the version of the limits ({@link #limitsVersion}), the same in every limit's tag
 * </pre>
 *
 * <p><b>Warm-up</b> ({@code Limit.warmUp}) is a bucket with a cold factor in its tag; its state
 * words are then {@code fullAt}, the warm-up period in nanoseconds (a parameter, written with
 * the record like p0 and p1), and the instant its current warm-up started. A record without a
 * warm-up is the same as before, word for word; a Tally that predates warm-up refuses a record
 * with one as an unknown algorithm tag rather than deciding it without its ramp.
 *
 * <p><b>The limits' version</b> rides in the tag words' high bits, so a record keeps the version
 * of the configuration that wrote it without a change of format: a record written without a
 * version (every record written before versions existed) has none of those bits set and reads as
 * version 0, and a record of version 0 is the same as before, word for word. Its 45 bits keep
 * a tag word below 2^53, exact wherever a store computes in doubles (Redis' Lua). A Tally that
 * predates versions refuses a record of version 1 or more as an unknown algorithm tag rather
 * than misreading it.
 *
 * <p><b>Time never runs back.</b> A store decides a limiter no earlier than {@link #decidedAt()}:
 * a caller whose clock is behind (another host, an NTP step, a thread descheduled between reading
 * the clock and taking the state) is decided at the latest instant already decided, for every
 * algorithm, so a bucket cannot refuse what it granted a nanosecond later, and a window is never
 * rolled back. {@link LimiterCall#apply} applies the rule; a store only keeps the instant, and
 * keeps it past the state (a tombstone) for as long as it can when the limiter is full again.
 *
 * <p><b>Versions.</b> A store that persists records persists {@link #VERSION} with them and reads
 * them back with {@link #read}, which refuses a record of a version this Tally does not know with
 * an error that says so, rather than misreading it.
 *
 * @param decidedAt the latest instant (epoch nanoseconds) a decision on this state was taken at,
 *     or {@link Long#MIN_VALUE} if unknown
 * @param words the state machine's words; empty for a tombstone (full again)
 */
public record LimiterRecord(long decidedAt, long[] words) {
  /** The format of {@link #words()} this Tally writes and reads. */
  public static final int VERSION = 1;

  /** Width of one limit's part of {@link #words()}. */
  public static final int WORDS_PER_LIMIT = 6;

  /** The largest version of a limiter's limits: 2^45 - 1, room for a {@code yyyyMMddHHmmss} stamp. */
  public static final long MAX_LIMITS_VERSION = (1L << 45) - 1;

  /** Where the limits' version starts in a tag word: below it, the limit's kind. */
  public static final int VERSION_SHIFT = 8;

  /** Where a bucket's warm-up cold factor starts in a tag word: below it, the limit's kind. */
  public static final int COLD_FACTOR_SHIFT = 4;

  /**
   * The low byte of a limit's tag words: its kind, and for a bucket with a warm-up its cold factor
   * above {@link #COLD_FACTOR_SHIFT}. Limits whose low bytes differ are different limits.
   */
  public static int limitTag(Limit limit) {
    return limit.kind().tag() | limit.coldFactor() << COLD_FACTOR_SHIFT;
  }

  /**
   * Whether {@code after} (words a decision leaves; null for none) starts a warm-up that
   * {@code before} (the words it was decided on; null or empty for none) had not: a limit with a
   * cold factor whose warm-up start (state word s2) or tag is not the one stored. The first call
   * on a cold limiter starts its warm-up even if it takes nothing (a peek, a refusal), so a store
   * that writes only calls that take or give back must write these too; otherwise each such call
   * would start the warm-up afresh, and a request larger than a cold limiter's burst would never
   * be granted.
   */
  public static boolean startsWarmUp(long[] before, long[] after) {
    if (after == null) {
      return false;
    }
    for (int o = 0; o < after.length; o += WORDS_PER_LIMIT) {
      if ((after[o] & 0xF0) != 0 && (before == null || o >= before.length || before[o] != after[o]
          || before[o + 5] != after[o + 5])) {
        return true;
      }
    }
    return false;
  }

  /** A tag word: a limit's kind ({@code Limit.Kind.tag()}) and the limits' version. */
  public static long tag(int kindTag, long limitsVersion) {
    return kindTag | limitsVersion << VERSION_SHIFT;
  }

  /** The version of the limits stored in {@code words}; 0 for none or for a tombstone. */
  public static long limitsVersion(long[] words) {
    return words.length == 0 ? 0 : words[0] >>> VERSION_SHIFT;
  }

  /** A record with no state that only remembers when it was last decided. */
  public static LimiterRecord tombstone(long decidedAt) {
    return new LimiterRecord(decidedAt, new long[0]);
  }

  /**
   * A stored record read back.
   *
   * @param key the limiter's key, for the message
   * @param version the version stored with the record
   * @throws StoreException if the version is not {@link #VERSION} or the words are malformed
   */
  public static LimiterRecord read(String key, int version, long decidedAt, long[] words) {
    if (version != VERSION) {
      throw new StoreException("the state of rate limiter '" + key + "' is in record format "
          + version + (version > VERSION ? ", written by a newer Tally" : "") + "; this Tally reads"
          + " format " + VERSION + ". Upgrade every process sharing the store, or reset the limiter");
    }
    if (words.length % WORDS_PER_LIMIT != 0) {
      throw new StoreException("the state of rate limiter '" + key + "' has " + words.length
          + " words, not a multiple of " + WORDS_PER_LIMIT + "; reset the limiter to start it afresh");
    }
    return new LimiterRecord(decidedAt, words);
  }

  /** Whether this is a tombstone: no state, only an instant. */
  public boolean isTombstone() {
    return words.length == 0 || words[0] == 0;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LimiterRecord r && r.decidedAt == decidedAt && Arrays.equals(r.words, words);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(decidedAt) * 31 + Arrays.hashCode(words);
  }

  @Override
  public String toString() {
    return "LimiterRecord[v" + VERSION + ", decidedAt=" + decidedAt + ", " + Arrays.toString(words) + "]";
  }
}
