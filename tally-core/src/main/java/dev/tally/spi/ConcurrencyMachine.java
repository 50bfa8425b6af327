package dev.tally.spi;

import java.util.Arrays;

/**
 * The state machine of a concurrency limit: every store runs {@link #apply} (or its port, for a
 * store that runs its own language, like Redis' {@code concurrency.lua}) atomically on a key's
 * {@link ConcurrencyRecord}: read it, apply, write {@link Outcome#next()} if
 * {@link Outcome#changed()}, as one step with respect to every other caller of the key.
 *
 * <h2>The rules</h2>
 *
 * <ul>
 *   <li><b>Time never runs back.</b> A step is decided at {@code max(now, decidedAt)}, so a caller
 *       whose clock lags cannot revive a lease another caller saw expire.
 *   <li><b>Expiry frees permits by itself.</b> A lease whose {@code expiresAt <= now} holds
 *       nothing: every step drops such leases first. A holder that died gives its permits back
 *       within its ttl, with no one to clean up after it.
 *   <li><b>No over-grant.</b> An acquire is granted only if the weights of the unexpired leases
 *       plus its own stay within {@code maxPermits}; the check and the grant are this one step.
 *   <li><b>Fencing.</b> Each grant takes {@code fencing + 1} as its token and stores it as the new
 *       {@code fencing}; the counter is never reset, so tokens strictly increase per key for ever
 *       and a resource that keeps the highest token it has seen can refuse a stale holder.
 *   <li><b>Retries.</b> An acquire whose nonce is already a live lease's returns that lease
 *       unchanged: a retried acquire whose first reply was lost takes no second permit. Renewal of
 *       a live lease is idempotent in effect (it sets, not adds), and release of a lease not held
 *       is harmless, so neither needs an operation id.
 *   <li><b>Dead leases stay dead.</b> Renewing a released or expired lease is refused: its permits
 *       may belong to someone else already.
 * </ul>
 *
 * <h2>The queue of waiters</h2>
 *
 * <p>A waiting acquirer (a call with {@code queueTtlNanos > 0}) that is refused keeps a ticket in
 * the record: its nonce, its weight and an expiry {@code queueTtlNanos} after the step, which its
 * next look refreshes. Tickets are kept in the order they were first taken; a waiter whose ticket
 * lapsed (it died, or stopped looking) takes a new one at the back.
 *
 * <ul>
 *   <li><b>Room is held for those ahead.</b> An acquire is granted only if the permits free now
 *       cover its weight plus the weights of every live ticket ahead of it: all of them for a
 *       caller with no ticket (a {@code tryAcquire}, or a waiter's first look), those queued
 *       before its own for a waiter. So a grant never takes a permit an older waiter needs: once
 *       the permits cover a ticket and every ticket ahead of it, they stay covered until it is
 *       granted (grants behind it need a larger cover; grants ahead of it move weight from the
 *       queue to the leases; releases and expiries only free), and while they do not cover it,
 *       nobody queued after it is granted anything. A heavy waiter is thus not starved by light
 *       ones, and a light one behind it is granted early only when that delays nobody ahead.
 *   <li><b>The bound on waiting.</b> A ticket is granted at its holder's first look after the
 *       permits held by leases granted before it or to tickets ahead of it free (released, or
 *       expired): no lease granted after it to anyone behind it counts.
 *   <li><b>A dead waiter blocks briefly.</b> A look refreshes its ticket to {@code queueTtlNanos}
 *       from now once less than half of that is left, so a ticket lapses at most
 *       {@code queueTtlNanos} after its holder's last look; a waiter that gives up withdraws it at once
 *       ({@link ConcurrencyOperation#WITHDRAW}).
 *   <li><b>The queue is bounded.</b> At most {@link #MAX_TICKETS} tickets (fewer where a store's
 *       record is smaller); a waiter refused a place stays unqueued, looks again like the others,
 *       and takes a place when one frees. A weight above {@code maxPermits} never queues.
 * </ul>
 */
public final class ConcurrencyMachine {
  /** The most tickets a record holds. */
  public static final int MAX_TICKETS = 64;

  private ConcurrencyMachine() {}

  /**
   * What a step did.
   *
   * @param next the record to store
   * @param result the answer for the caller
   * @param changed whether {@code next} differs from the stored record (a store may skip the write)
   */
  public record Outcome(ConcurrencyRecord next, ConcurrencyResult result, boolean changed) {}

  /**
   * Runs one step. Pure: reads no clock and no store.
   *
   * @param stored the stored record, or null if there is none
   * @param now the store's clock, in epoch nanoseconds
   */
  public static Outcome apply(ConcurrencyRecord stored, long now, ConcurrencyCall call) {
    return apply(stored, now, call, Integer.MAX_VALUE);
  }

  /**
   * Runs one step on a store whose records hold at most {@code maxWords} words: a ticket that
   * would make the record larger is not taken (the waiter stays unqueued), as beyond
   * {@link #MAX_TICKETS}.
   */
  public static Outcome apply(ConcurrencyRecord stored, long now, ConcurrencyCall call, int maxWords) {
    ConcurrencyRecord s = stored == null ? ConcurrencyRecord.EMPTY : stored;
    long at = Math.max(now, s.decidedAt());
    long[] live = dropExpired(s.leases(), at, ConcurrencyRecord.LEASE_WORDS, 3);
    long[] queue = dropExpired(s.tickets(), at, ConcurrencyRecord.TICKET_WORDS, 2);
    boolean changed = stored == null ? call.operation() == ConcurrencyOperation.ACQUIRE
        : live.length != s.leases().length || queue.length != s.tickets().length;
    long fencing = s.fencing();
    long inUse = inUse(live);
    int found = find(live, call.token(), call.nonce(), call.operation() == ConcurrencyOperation.ACQUIRE);
    int mine = findTicket(queue, call.nonce());
    boolean ok;
    long token = 0;
    long expiresAt = 0;
    switch (call.operation()) {
      case ACQUIRE -> {
        long ahead = ahead(queue, mine < 0 ? queue.length : mine);
        if (found >= 0) { // a retry of an acquire that was granted
          ok = true;
          token = live[found];
          expiresAt = live[found + 3];
        } else if (fits(call.weight(), call.maxPermits() - inUse, ahead)) {
          ok = true;
          token = Math.addExact(fencing, 1);
          fencing = token;
          expiresAt = saturatedAdd(at, call.ttlNanos());
          live = Arrays.copyOf(live, live.length + ConcurrencyRecord.LEASE_WORDS);
          int i = live.length - ConcurrencyRecord.LEASE_WORDS;
          live[i] = token;
          live[i + 1] = call.nonce();
          live[i + 2] = call.weight();
          live[i + 3] = expiresAt;
          inUse += call.weight();
          if (mine >= 0) {
            queue = remove(queue, mine, ConcurrencyRecord.TICKET_WORDS);
          }
          changed = true;
        } else {
          ok = false;
          if (call.queueTtlNanos() > 0 && call.weight() <= call.maxPermits()) {
            long until = saturatedAdd(at, call.queueTtlNanos());
            if (mine >= 0) {
              // Refreshed only once past half its life: a waiter's look writes the record a few
              // times per ticket ttl, not at every look (a write holds the key's lock longer).
              if (queue[mine + 2] - at <= call.queueTtlNanos() / 2 && queue[mine + 2] != until) {
                queue = queue == s.tickets() ? queue.clone() : queue;
                queue[mine + 2] = until;
                changed = true;
              }
            } else if (queue.length / ConcurrencyRecord.TICKET_WORDS < MAX_TICKETS
                && (long) ConcurrencyRecord.HEADER_WORDS_2 + live.length + queue.length
                    + ConcurrencyRecord.TICKET_WORDS <= maxWords) {
              queue = Arrays.copyOf(queue, queue.length + ConcurrencyRecord.TICKET_WORDS);
              int i = queue.length - ConcurrencyRecord.TICKET_WORDS;
              queue[i] = call.nonce();
              queue[i + 1] = call.weight();
              queue[i + 2] = until;
              changed = true;
            }
          }
        }
      }
      case RENEW -> {
        ok = found >= 0;
        if (ok) {
          token = live[found];
          expiresAt = saturatedAdd(at, call.ttlNanos());
          if (live[found + 3] != expiresAt) {
            live = live == s.leases() ? live.clone() : live;
            live[found + 3] = expiresAt;
            changed = true;
          }
        }
      }
      case RELEASE -> {
        ok = found >= 0;
        if (ok) {
          token = live[found];
          expiresAt = live[found + 3];
          inUse -= live[found + 2];
          live = remove(live, found, ConcurrencyRecord.LEASE_WORDS);
          changed = true;
        }
      }
      case WITHDRAW -> {
        ok = mine >= 0;
        if (ok) {
          queue = remove(queue, mine, ConcurrencyRecord.TICKET_WORDS);
          changed = true;
        }
      }
      case PEEK -> ok = true;
      default -> throw new IllegalArgumentException("unknown operation " + call.operation());
    }
    ConcurrencyRecord next = changed ? new ConcurrencyRecord(at, fencing, live, queue) : s;
    return new Outcome(next, new ConcurrencyResult(ok, token, expiresAt, inUse, fencing, earliest(live), at), changed);
  }

  /** The entries of {@code width} words whose expiry (at {@code expiry}) is after {@code now}. */
  private static long[] dropExpired(long[] entries, long now, int width, int expiry) {
    int kept = 0;
    for (int i = 0; i < entries.length; i += width) {
      if (entries[i + expiry] > now) {
        kept++;
      }
    }
    if (kept * width == entries.length) {
      return entries;
    }
    long[] out = new long[kept * width];
    int o = 0;
    for (int i = 0; i < entries.length; i += width) {
      if (entries[i + expiry] > now) {
        System.arraycopy(entries, i, out, o, width);
        o += width;
      }
    }
    return out;
  }

  private static long[] remove(long[] entries, int at, int width) {
    long[] rest = new long[entries.length - width];
    System.arraycopy(entries, 0, rest, 0, at);
    System.arraycopy(entries, at + width, rest, at, rest.length - at);
    return rest;
  }

  /** The weights of the tickets before offset {@code end}, saturated (a weight may be as large as maxPermits). */
  private static long ahead(long[] queue, int end) {
    long sum = 0;
    for (int i = 0; i < end; i += ConcurrencyRecord.TICKET_WORDS) {
      sum = saturatedAdd(sum, queue[i + 1]);
    }
    return sum;
  }

  /** Whether {@code weight} fits in {@code room} free permits after {@code ahead} held for older tickets. */
  private static boolean fits(long weight, long room, long ahead) {
    return room >= 0 && ahead <= room && weight <= room - ahead;
  }

  /** The ticket's offset by nonce; -1 if none. */
  private static int findTicket(long[] queue, long nonce) {
    for (int i = 0; i < queue.length; i += ConcurrencyRecord.TICKET_WORDS) {
      if (queue[i] == nonce) {
        return i;
      }
    }
    return -1;
  }

  private static long inUse(long[] leases) {
    long sum = 0;
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      sum += leases[i + 2];
    }
    return sum;
  }

  private static long earliest(long[] leases) {
    long min = 0;
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      if (min == 0 || leases[i + 3] < min) {
        min = leases[i + 3];
      }
    }
    return min;
  }

  /** The lease's offset, matched by nonce alone for an acquire, else by token and nonce; -1 if none. */
  private static int find(long[] leases, long token, long nonce, boolean byNonce) {
    for (int i = 0; i < leases.length; i += ConcurrencyRecord.LEASE_WORDS) {
      if (leases[i + 1] == nonce && (byNonce || leases[i] == token)) {
        return i;
      }
    }
    return -1;
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
