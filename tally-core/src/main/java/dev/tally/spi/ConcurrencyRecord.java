package dev.tally.spi;

import dev.tally.StoreException;
import java.util.Arrays;

/**
 * A concurrency limit's stored state, as every store keeps it: the fencing counter, the latest
 * instant a step was decided at, the live leases, and the waiters' tickets in queue order.
 *
 * <pre>
 *   format 1 (no ticket):   TAG   | decidedAt | fencing | lease 0 (4 words) | lease 1 | ...
 *   format 2 (tickets):     TAG_2 | decidedAt | fencing | leaseCount | leases ... | ticket 0 (3 words) | ...
 *   lease:  token | nonce | weight | expiresAt
 *   ticket: nonce | weight | expiresAt
 * </pre>
 *
 * <p>A record without tickets is written in format 1, so a limit nobody queues on reads as it
 * always did, also by a Tally that predates tickets; such a Tally refuses a record of format 2
 * with the error for a newer format, never misreads it.
 *
 * <p>The record is never deleted, even when no lease is held: the fencing counter must survive
 * every lease's expiry, or a token would be granted twice. One record per name is the cost.
 * {@link #TAG} leads the words so that a rate limiter (whose first word is a limit's kind, below
 * 256) or a later format never misreads them.
 *
 * @param decidedAt the latest instant (epoch nanoseconds) a step on this state was decided at
 * @param fencing the largest fencing token granted so far
 * @param leases {@link #LEASE_WORDS} words per lease, in the order granted
 * @param tickets {@link #TICKET_WORDS} words per waiting acquirer's ticket, oldest first
 */
public record ConcurrencyRecord(long decidedAt, long fencing, long[] leases, long[] tickets) {
  /** The first word of a record of format 1: "concurrency, format 1". */
  public static final long TAG = 0x436F_6E63_0000_0001L;

  /** The first word of a record of format 2, which holds tickets: "concurrency, format 2". */
  public static final long TAG_2 = 0x436F_6E63_0000_0002L;

  /** Words per lease. */
  public static final int LEASE_WORDS = 4;

  /** Words per ticket. */
  public static final int TICKET_WORDS = 3;

  /** Words before the leases in format 1. */
  public static final int HEADER_WORDS = 3;

  /** Words before the leases in format 2. */
  public static final int HEADER_WORDS_2 = 4;

  /** A state with no lease and no token granted yet. */
  public static final ConcurrencyRecord EMPTY = new ConcurrencyRecord(Long.MIN_VALUE, 0, new long[0]);

  /** A state without tickets. */
  public ConcurrencyRecord(long decidedAt, long fencing, long[] leases) {
    this(decidedAt, fencing, leases, new long[0]);
  }

  /** The words a store keeps. */
  public long[] toWords() {
    if (tickets.length == 0) {
      long[] w = new long[HEADER_WORDS + leases.length];
      w[0] = TAG;
      w[1] = decidedAt;
      w[2] = fencing;
      System.arraycopy(leases, 0, w, HEADER_WORDS, leases.length);
      return w;
    }
    long[] w = new long[HEADER_WORDS_2 + leases.length + tickets.length];
    w[0] = TAG_2;
    w[1] = decidedAt;
    w[2] = fencing;
    w[3] = size();
    System.arraycopy(leases, 0, w, HEADER_WORDS_2, leases.length);
    System.arraycopy(tickets, 0, w, HEADER_WORDS_2 + leases.length, tickets.length);
    return w;
  }

  /** How many words {@link #toWords} gives. */
  public int words() {
    return tickets.length == 0 ? HEADER_WORDS + leases.length : HEADER_WORDS_2 + leases.length + tickets.length;
  }

  /**
   * A record read back from its words, of either format.
   *
   * @param key the limit's key, for the message
   * @throws StoreException if the words are not a concurrency record of a known format
   */
  public static ConcurrencyRecord fromWords(String key, long[] words) {
    if (words.length >= HEADER_WORDS && words[0] == TAG && (words.length - HEADER_WORDS) % LEASE_WORDS == 0) {
      return new ConcurrencyRecord(words[1], words[2], Arrays.copyOfRange(words, HEADER_WORDS, words.length));
    }
    if (words.length >= HEADER_WORDS_2 && words[0] == TAG_2 && words[3] >= 0
        && words[3] <= (words.length - HEADER_WORDS_2) / LEASE_WORDS
        && (words.length - HEADER_WORDS_2 - words[3] * LEASE_WORDS) % TICKET_WORDS == 0) {
      int end = HEADER_WORDS_2 + (int) words[3] * LEASE_WORDS;
      return new ConcurrencyRecord(words[1], words[2], Arrays.copyOfRange(words, HEADER_WORDS_2, end),
          Arrays.copyOfRange(words, end, words.length));
    }
    throw new StoreException("the state under '" + key + "' is not a concurrency limit's of this Tally's format"
        + (words.length > 0 && words[0] != TAG && words[0] != TAG_2 ? " (another kind of value, or a newer format)" : "")
        + "; use another name, or delete it");
  }

  /** How many leases the record holds. */
  public int size() {
    return leases.length / LEASE_WORDS;
  }

  /** How many waiters' tickets the record holds. */
  public int waiting() {
    return tickets.length / TICKET_WORDS;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ConcurrencyRecord r && r.decidedAt == decidedAt && r.fencing == fencing
        && Arrays.equals(r.leases, leases) && Arrays.equals(r.tickets, tickets);
  }

  @Override
  public int hashCode() {
    return ((Long.hashCode(decidedAt) * 31 + Long.hashCode(fencing)) * 31 + Arrays.hashCode(leases)) * 31
        + Arrays.hashCode(tickets);
  }

  @Override
  public String toString() {
    return "ConcurrencyRecord[decidedAt=" + decidedAt + ", fencing=" + fencing + ", leases="
        + Arrays.toString(leases) + (tickets.length == 0 ? "" : ", tickets=" + Arrays.toString(tickets)) + "]";
  }
}
