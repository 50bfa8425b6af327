package dev.tally.spi;

import dev.tally.StoreException;
import java.util.Arrays;

/**
 * A concurrency limit's stored state, as every store keeps it: the fencing counter, the latest
 * instant a step was decided at, and the live leases.
 *
 * <pre>
 *   words: TAG | decidedAt | fencing | lease 0 (4 words) | lease 1 | ...
 *   lease: token | nonce | weight | expiresAt
 * </pre>
 *
 * <p>The record is never deleted, even when no lease is held: the fencing counter must survive
 * every lease's expiry, or a token would be granted twice. One record per name is the cost.
 * {@link #TAG} leads the words so that a rate limiter (whose first word is a limit's kind, below
 * 256) or a later format never misreads them.
 *
 * @param decidedAt the latest instant (epoch nanoseconds) a step on this state was decided at
 * @param fencing the largest fencing token granted so far
 * @param leases {@link #LEASE_WORDS} words per lease, in the order granted
 */
public record ConcurrencyRecord(long decidedAt, long fencing, long[] leases) {
  /** The first word of a record of this format: "concurrency, format 1". */
  public static final long TAG = 0x436F_6E63_0000_0001L;

  /** Words per lease. */
  public static final int LEASE_WORDS = 4;

  /** Words before the leases. */
  public static final int HEADER_WORDS = 3;

  /** A state with no lease and no token granted yet. */
  public static final ConcurrencyRecord EMPTY = new ConcurrencyRecord(Long.MIN_VALUE, 0, new long[0]);

  /** The words a store keeps. */
  public long[] toWords() {
    long[] w = new long[HEADER_WORDS + leases.length];
    w[0] = TAG;
    w[1] = decidedAt;
    w[2] = fencing;
    System.arraycopy(leases, 0, w, HEADER_WORDS, leases.length);
    return w;
  }

  /**
   * A record read back from its words.
   *
   * @param key the limit's key, for the message
   * @throws StoreException if the words are not a concurrency record of this format
   */
  public static ConcurrencyRecord fromWords(String key, long[] words) {
    if (words.length < HEADER_WORDS || words[0] != TAG || (words.length - HEADER_WORDS) % LEASE_WORDS != 0) {
      throw new StoreException("the state under '" + key + "' is not a concurrency limit's of this Tally's format"
          + (words.length > 0 && words[0] != TAG ? " (another kind of value, or a newer format)" : "")
          + "; use another name, or delete it");
    }
    return new ConcurrencyRecord(words[1], words[2], Arrays.copyOfRange(words, HEADER_WORDS, words.length));
  }

  /** How many leases the record holds. */
  public int size() {
    return leases.length / LEASE_WORDS;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ConcurrencyRecord r && r.decidedAt == decidedAt && r.fencing == fencing
        && Arrays.equals(r.leases, leases);
  }

  @Override
  public int hashCode() {
    return (Long.hashCode(decidedAt) * 31 + Long.hashCode(fencing)) * 31 + Arrays.hashCode(leases);
  }

  @Override
  public String toString() {
    return "ConcurrencyRecord[decidedAt=" + decidedAt + ", fencing=" + fencing + ", leases="
        + Arrays.toString(leases) + "]";
  }
}
