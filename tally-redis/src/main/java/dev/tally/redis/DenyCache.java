package dev.tally.redis;

import dev.tally.Decision;
import dev.tally.TallyListener;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The hot-key guard ({@code ?denyCache=true}): limiters this process has seen denied, each until
 * its retry-after instant, so that a flood of requests against an exhausted limiter is answered
 * here instead of each costing Redis a script run.
 *
 * <p>It only ever answers "denied", so it cannot admit more than Redis would. A denial of
 * {@code n} permits with retry-after {@code R} answers every request of {@code n} or more permits
 * until {@code R} after the denied call was <em>sent</em> (Redis decided later than that, so its
 * own instant is no earlier): every algorithm's retry-after grows with the permits asked and a
 * denied request stays denied until then, unless someone gives units back. This process's
 * refunds, resets, reconfigurations and top-ups clear the limiter's entry; other processes'
 * do not reach it, so after such a change elsewhere this process may go on denying until the
 * cached retry-after: the price of not asking. The {@code remaining} of a cached denial is the
 * one Redis gave; its retry-after and reset-after count down on the local clock. So does each
 * limit's own state of a limiter with several ({@link Decision#limits()}): its remaining as
 * given, its reset counting down.
 *
 * <p>Answers from the cache are counted ({@link #hits()}) and reported to the
 * {@link TallyListener#onLocalDenial} of the store's {@code Tally}.
 */
final class DenyCache {
  private static final System.Logger LOG = System.getLogger("dev.tally.redis");

  // perLimit: each limit's remaining, limit and the instant it is full again; null for one limit.
  private record Entry(long permits, long until, long resetAt, long remaining, long limit, int limitIndex,
      long[] perLimit) {}

  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
  private final int maxEntries;
  private final TallyListener listener;
  private final AtomicLong invalidations = new AtomicLong();
  private final LongAdder hits = new LongAdder();

  DenyCache(int maxEntries, TallyListener listener) {
    this.maxEntries = maxEntries;
    this.listener = listener;
  }

  /** A stamp to take before sending a call whose denial may be cached. */
  long stamp() {
    return invalidations.get();
  }

  /** The cached denial of {@code permits} on {@code key} at {@code now}, or null. */
  Decision lookup(String key, long permits, long now) {
    Entry e = entries.get(key);
    if (e == null) {
      return null;
    }
    if (now - e.until >= 0) {
      entries.remove(key, e);
      return null;
    }
    if (permits < e.permits) {
      return null;
    }
    hits.increment();
    try {
      listener.onLocalDenial(key);
    } catch (RuntimeException listenerBug) {
      LOG.log(Level.ERROR, "TallyListener threw; ignoring", listenerBug);
    }
    return new Decision(false, e.remaining, e.limit, e.until - now, Math.max(0, e.resetAt - now), e.limitIndex,
        countedDown(e.perLimit, now));
  }

  /**
   * Remembers a denial that Redis gave to a call sent at {@code sentAt}, unless an invalidation
   * happened since {@code stamp}.
   */
  void denied(String key, long permits, long sentAt, long stamp, Decision d) {
    long retry = d.retryAfterNanos();
    if (d.allowed() || retry <= 0 || retry == Decision.NEVER || invalidations.get() != stamp) {
      return;
    }
    if (entries.size() >= maxEntries && !entries.containsKey(key)) {
      entries.values().removeIf(e -> sentAt - e.until >= 0);
      if (entries.size() >= maxEntries) {
        return;
      }
    }
    Entry e = new Entry(permits, sentAt + retry, sentAt + d.resetAfterNanos(), d.remaining(), d.limit(),
        d.limitIndex(), resetInstants(d, sentAt));
    entries.put(key, e);
    if (invalidations.get() != stamp) {
      entries.remove(key, e); // an invalidation raced with this insertion: drop it
    }
  }

  /** Each limit of {@code d} with its reset as an instant after {@code sentAt}; null for one limit. */
  private static long[] resetInstants(Decision d, long sentAt) {
    List<Decision.LimitState> limits = d.limits();
    if (limits.size() == 1) {
      return null;
    }
    long[] r = new long[3 * limits.size()];
    for (int i = 0; i < limits.size(); i++) {
      Decision.LimitState l = limits.get(i);
      r[3 * i] = l.remaining();
      r[3 * i + 1] = l.limit();
      r[3 * i + 2] = sentAt + l.resetAfterNanos();
    }
    return r;
  }

  /** {@code entry}'s limits as a decision at {@code now} reports them; a new array, for the decision to own. */
  private static long[] countedDown(long[] entry, long now) {
    if (entry == null) {
      return null;
    }
    long[] r = entry.clone();
    for (int i = 2; i < r.length; i += 3) {
      r[i] = Math.max(0, r[i] - now);
    }
    return r;
  }

  /** Forgets {@code key}: this process gave units back or changed the limiter. */
  void invalidate(String key) {
    invalidations.incrementAndGet();
    entries.remove(key);
  }

  /** Requests answered from the cache so far. */
  long hits() {
    return hits.sum();
  }

  /** Limiters currently cached (some possibly past their retry-after). */
  int size() {
    return entries.size();
  }
}
