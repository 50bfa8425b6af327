package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.ConcurrencyLimit;
import dev.tally.Counters;
import dev.tally.Lease;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.Tally;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Threads that call a store until stopped, keeping the books a fault test checks against the
 * store afterwards: what was acknowledged, how many calls failed (their outcome unknown: a failed
 * call may or may not have applied), the longest call, and when each thread last succeeded. Each
 * kind of thread is a {@link Call} of its own: increments of one counter ({@link Incrementing}),
 * decisions on one limiter ({@link Deciding}), joint decisions across several
 * ({@link DecidingJointly}), leases taken and given back on one concurrency limit
 * ({@link Leasing}). Fault tests start one, break the store's server under it, and check.
 *
 * <pre>{@code
 * FaultWorkload load = FaultWorkload.builder()
 *     .incrementing(counters, "n", 4)
 *     .deciding(limiter, 4)
 *     .decidingJointly(tally, List.of(a, b), 2)
 *     .leasing(limit, Duration.ofHours(1), 2)
 *     .start();
 * }</pre>
 */
public final class FaultWorkload {
  private final List<Worker<Incrementing>> incrementers = new ArrayList<>();
  private final List<Worker<Deciding>> deciders = new ArrayList<>();
  private final List<Worker<DecidingJointly>> jointDeciders = new ArrayList<>();
  private final List<Worker<Leasing>> leasers = new ArrayList<>();
  private volatile boolean stop;

  private FaultWorkload() {}

  /**
   * Starts {@code incrementing} threads calling {@code counters.incr(key)} and {@code deciding}
   * threads calling {@code limiter.decide(1)}.
   */
  public static FaultWorkload start(Counters counters, String key, int incrementing, RateLimiter limiter,
      int deciding) {
    return builder().incrementing(counters, key, incrementing).deciding(limiter, deciding).start();
  }

  /** A workload of the threads the builder is told to add, started by {@link Builder#start()}. */
  public static Builder builder() {
    return new Builder();
  }

  /** Which threads a workload runs. */
  public static final class Builder {
    private final FaultWorkload w = new FaultWorkload();

    private Builder() {}

    /** {@code threads} threads calling {@code counters.incr(key)}. */
    public Builder incrementing(Counters counters, String key, int threads) {
      w.add(w.incrementers, "incrementer", threads, i -> new Incrementing(counters, key));
      return this;
    }

    /** {@code threads} threads calling {@code limiter.decide(1)}. */
    public Builder deciding(RateLimiter limiter, int threads) {
      w.add(w.deciders, "decider", threads, i -> new Deciding(limiter));
      return this;
    }

    /**
     * {@code threads} threads calling {@code tally.decide(limiters, 1)}. The limiters should be
     * no other thread's, so that what each has taken is the joint decisions' alone.
     */
    public Builder decidingJointly(Tally tally, List<RateLimiter> limiters, int threads) {
      w.add(w.jointDeciders, "joint-decider", threads, i -> new DecidingJointly(tally, limiters));
      return this;
    }

    /**
     * {@code threads} threads taking leases of one permit for {@code ttl} on {@code limit}, each
     * renewing the oldest it holds and releasing it once it holds more than a few. The limit's
     * {@code maxPermits} should be large enough never to refuse, and {@code ttl} long enough that
     * no lease expires during the test.
     */
    public Builder leasing(ConcurrencyLimit limit, Duration ttl, int threads) {
      w.add(w.leasers, "leaser", threads, i -> new Leasing(limit, ttl));
      return this;
    }

    /** Starts every thread. */
    public FaultWorkload start() {
      w.all().forEach(Thread::start);
      return w;
    }
  }

  private <C extends Call> void add(List<Worker<C>> kind, String name, int threads, Function<Integer, C> call) {
    for (int i = 0; i < threads; i++) {
      kind.add(new Worker<>(name + "-" + i, call.apply(i)));
    }
  }

  private List<Worker<?>> all() {
    List<Worker<?>> all = new ArrayList<>(incrementers);
    all.addAll(deciders);
    all.addAll(jointDeciders);
    all.addAll(leasers);
    return all;
  }

  /** Whether every thread has had a call succeed at or after {@code nanoTime} ({@link System#nanoTime()}). */
  public boolean allSucceededSince(long nanoTime) {
    return all().stream().allMatch(w -> w.lastSuccessAt >= nanoTime);
  }

  /**
   * The latest, over the threads, of each one's first success at or after {@code nanoTime}
   * ({@link System#nanoTime()}), or {@code Long.MAX_VALUE} if one has none yet.
   */
  public long everyThreadSucceededAt(long nanoTime) {
    long latest = Long.MIN_VALUE;
    for (Worker<?> w : all()) {
      long first = w.firstSuccessSince(nanoTime);
      latest = Math.max(latest, first);
    }
    return latest;
  }

  /**
   * Waits up to {@code within} for every thread to succeed at or after {@code nanoTime}; returns
   * {@link #everyThreadSucceededAt} then ({@code Long.MAX_VALUE} if one has not).
   */
  public long awaitEveryThreadSucceededAt(long nanoTime, Duration within) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (everyThreadSucceededAt(nanoTime) == Long.MAX_VALUE && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    return everyThreadSucceededAt(nanoTime);
  }

  /**
   * Stops the threads and waits up to {@code millis} for each; returns the names of those still
   * running: a call that hangs.
   */
  public List<String> stop(long millis) throws InterruptedException {
    stop = true;
    List<String> hanging = new ArrayList<>();
    for (Worker<?> w : all()) {
      w.join(millis);
      if (w.isAlive()) {
        hanging.add(w.getName());
      }
    }
    return hanging;
  }

  /**
   * Checks, after {@link #stop}, that every call ended within {@code bound} and failed, if at
   * all, with a store failure.
   */
  public void assertEveryCallEndedWithin(Duration bound) {
    assertThat(unexpected()).as("a failure other than a store failure").isNull();
    assertThat(Duration.ofNanos(longestCallNanos()))
        .as("the longest call (%s)", this).isLessThanOrEqualTo(bound);
  }

  /**
   * Checks, after {@link #stop}, that no call that failed after waiting its whole {@code timeout}
   * failed as a bare {@link StoreException}: it timed out, so it says so
   * ({@link dev.tally.StoreTimeoutException}, "may or may not have been applied"), or it never
   * reached the server ({@link dev.tally.StoreUnavailableException}, e.g. no pooled connection in
   * time). A bare failure hides which, as a rollback's error replacing the timeout once did.
   */
  public void assertTimedOutCallsFailAsTimeouts(Duration timeout) {
    Worker<?> w = all().stream().max(Comparator.comparingLong(x -> x.longestOtherFailureNanos)).orElseThrow();
    assertThat(Duration.ofNanos(w.longestOtherFailureNanos))
        .as("the longest call that failed as a bare StoreException (%s, %s)", w.getName(), w.longestOtherFailure)
        .isLessThan(timeout);
  }

  /**
   * Checks, after {@link #stop}, that the store kept the books of the increments and single
   * decisions: the counter holds every acknowledged increment and at most the failed ones
   * besides, and the limiter of {@code capacity} (adding nothing back meanwhile) has every
   * granted permit taken and at most the failed decisions' besides.
   *
   * @param counter the counter's value now
   * @param taken the limiter's capacity less what it has available now
   */
  public void assertNothingAcknowledgedLost(long counter, long taken, long capacity) {
    assertThat(counter).as("the counter (%s)", this)
        .isBetween(acknowledged(), acknowledged() + incrementsUnknown());
    assertThat(taken).as("permits taken (%s)", this)
        .isBetween(granted(), Math.min(capacity, granted() + decisionsUnknown()));
  }

  /**
   * Checks, after {@link #stop}, the books of the joint decisions, given what each of their
   * limiters (of {@code capacity}, adding nothing back meanwhile) has taken now.
   *
   * <p>Every acknowledged joint grant took a permit from every limiter, so none may show fewer
   * taken than the grants. A failed call may have been applied whole, or (where the store cannot
   * undo a write the timeout cut short) in part, so each limiter may show up to one more per
   * failed call, and the limiters may differ by as much; a difference beyond that is a decision
   * that charged one limiter and not the other although it was acknowledged, which all or
   * nothing forbids. A refusal is impossible at a capacity the test cannot exhaust, so any is a
   * permit taken that no grant accounts for.
   *
   * @param taken each limiter's capacity less what it has available now, in the order given to
   *     {@link Builder#decidingJointly}
   */
  public void assertJointDecisionsAllOrNothing(List<Long> taken, long capacity) {
    long grants = jointGrants();
    long unknown = jointUnknown();
    assertThat(jointRefusals()).as("joint refusals at a capacity of %d (%s)", capacity, this).isZero();
    for (int i = 0; i < taken.size(); i++) {
      assertThat(taken.get(i)).as("permits taken from joint limiter %d (%s)", i, this)
          .isBetween(grants, Math.min(capacity, grants + unknown));
    }
    long spread = taken.stream().mapToLong(Long::longValue).max().orElse(0)
        - taken.stream().mapToLong(Long::longValue).min().orElse(0);
    assertThat(spread).as("the joint limiters' taken differ (%s: %s)", taken, this).isLessThanOrEqualTo(unknown);
  }

  /**
   * Checks, after {@link #stop}, the books of the leases, given the permits the limit says are
   * held now.
   *
   * <p>No lease expires during the test, so a lease acknowledged and not yet given back must
   * still hold its permit: the held count is at least those. A failed acquire may have taken a
   * permit nobody will release, and a failed release may have left one held, so the count may
   * exceed them by one per such failure and no more; more is a permit taken twice, or one the
   * store keeps after acknowledging its release. A held lease must renew and release with
   * {@code true}: {@code false} means the store lost a lease it had granted. Each thread's
   * fencing tokens must rise, since a retried acquire that reused or lowered a token would let
   * a stale holder's writes through a fenced resource; and no two leases may share one.
   *
   * @param held {@link ConcurrencyLimit#inUse()} now
   */
  public void assertLeasesKept(long held) {
    long sure = leasesHeld();
    assertThat(held).as("permits held (%s)", this).isBetween(sure, sure + leasesUnknown());
    for (Worker<Leasing> w : leasers) {
      Leasing l = w.call;
      assertThat(l.refused).as("acquires refused by a limit never full (%s)", w.getName()).isZero();
      assertThat(l.lost).as("held leases the store did not know (%s): %s", w.getName(), l.firstLost).isZero();
      assertThat(l.tokenOutOfOrder).as("fencing tokens not rising (%s)", w.getName()).isNull();
    }
    List<Long> tokens = leasers.stream().flatMap(w -> w.call.tokens.stream()).toList();
    Set<Long> distinct = new HashSet<>(tokens);
    assertThat(distinct).as("fencing tokens, each granted once").hasSameSizeAs(tokens);
  }

  /** Increments acknowledged. Read after {@link #stop}. */
  public long acknowledged() {
    return incrementers.stream().mapToLong(w -> w.call.acknowledged).sum();
  }

  /** Increments that failed: each may or may not have applied. Read after {@link #stop}. */
  public long incrementsUnknown() {
    return incrementers.stream().mapToLong(w -> w.failed).sum();
  }

  /** Permits granted. Read after {@link #stop}. */
  public long granted() {
    return deciders.stream().mapToLong(w -> w.call.granted).sum();
  }

  /** Decisions that failed: each may or may not have taken a permit. Read after {@link #stop}. */
  public long decisionsUnknown() {
    return deciders.stream().mapToLong(w -> w.failed).sum();
  }

  /** Joint decisions granted. Read after {@link #stop}. */
  public long jointGrants() {
    return jointDeciders.stream().mapToLong(w -> w.call.granted).sum();
  }

  /** Joint decisions refused. Read after {@link #stop}. */
  public long jointRefusals() {
    return jointDeciders.stream().mapToLong(w -> w.call.refused).sum();
  }

  /** Joint decisions that failed: each may or may not have taken its permits. Read after {@link #stop}. */
  public long jointUnknown() {
    return jointDeciders.stream().mapToLong(w -> w.failed).sum();
  }

  /** Leases acquired, acknowledged. Read after {@link #stop}. */
  public long leasesAcquired() {
    return leasers.stream().mapToLong(w -> w.call.acquired).sum();
  }

  /** Leases released, acknowledged. Read after {@link #stop}. */
  public long leasesReleased() {
    return leasers.stream().mapToLong(w -> w.call.released).sum();
  }

  /** Leases acquired, acknowledged, and never given back: each holds its permit. Read after {@link #stop}. */
  public long leasesHeld() {
    return leasers.stream().mapToLong(w -> w.call.holding.size()).sum();
  }

  /**
   * Acquires and releases that failed: each may have left a permit held that no lease the
   * threads know holds. Read after {@link #stop}.
   */
  public long leasesUnknown() {
    return leasers.stream().mapToLong(w -> w.call.acquiresFailed + w.call.releasesFailed).sum();
  }

  /** The longest call of any thread, in nanoseconds. Read after {@link #stop}. */
  public long longestCallNanos() {
    return all().stream().mapToLong(w -> w.longestNanos).max().orElse(0);
  }

  /** A failure other than a {@link StoreException}, or null. Read after {@link #stop}. */
  public Throwable unexpected() {
    return all().stream().map(w -> w.unexpected).filter(t -> t != null).findFirst().orElse(null);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder()
        .append(acknowledged()).append(" increments acknowledged, ").append(incrementsUnknown()).append(" failed; ")
        .append(granted()).append(" permits granted, ").append(decisionsUnknown()).append(" decisions failed");
    if (!jointDeciders.isEmpty()) {
      s.append("; ").append(jointGrants()).append(" joint grants, ").append(jointRefusals()).append(" refused, ")
          .append(jointUnknown()).append(" failed");
    }
    if (!leasers.isEmpty()) {
      s.append("; ").append(leasesAcquired()).append(" leases acquired, ").append(leasesReleased())
          .append(" released, ").append(leasesHeld()).append(" held, ").append(leasesUnknown())
          .append(" acquires or releases failed");
    }
    return s.append("; longest call ").append(TimeUnit.NANOSECONDS.toMillis(longestCallNanos())).append(" ms (")
        .append(longestCall()).append("; by kind: ").append(longestByKind()).append(")").toString();
  }

  /** The longest call of each kind of thread, in milliseconds. */
  private String longestByKind() {
    List<String> kinds = new ArrayList<>();
    for (List<? extends Worker<?>> kind : List.of(incrementers, deciders, jointDeciders, leasers)) {
      if (!kind.isEmpty()) {
        String name = kind.get(0).getName();
        kinds.add(name.substring(0, name.lastIndexOf('-')) + " "
            + TimeUnit.NANOSECONDS.toMillis(kind.stream().mapToLong(w -> w.longestNanos).max().orElse(0)) + " ms");
      }
    }
    return String.join(", ", kinds);
  }

  /** Which thread made the longest call, and how it ended. Read after {@link #stop}. */
  private String longestCall() {
    return all().stream().max(Comparator.comparingLong(w -> w.longestNanos))
        .map(w -> w.getName() + ", " + w.longestOutcome).orElse("none");
  }

  /**
   * One kind of call a thread makes over and over, keeping its own books. Its state is written
   * by its thread alone and read after {@link #stop} (after join(), which orders them).
   */
  private interface Call {
    /** Makes one call to the store. */
    void run();

    /** The call {@link #run} made last failed with a store failure: its outcome is unknown. */
    default void failed() {}
  }

  private static final class Incrementing implements Call {
    private final Counters counters;
    private final String key;
    long acknowledged;

    Incrementing(Counters counters, String key) {
      this.counters = counters;
      this.key = key;
    }

    @Override
    public void run() {
      counters.incr(key);
      acknowledged++;
    }
  }

  private static final class Deciding implements Call {
    private final RateLimiter limiter;
    long granted;

    Deciding(RateLimiter limiter) {
      this.limiter = limiter;
    }

    @Override
    public void run() {
      if (limiter.decide(1).allowed()) {
        granted++;
      }
    }
  }

  private static final class DecidingJointly implements Call {
    private final Tally tally;
    private final List<RateLimiter> limiters;
    long granted;
    long refused;

    DecidingJointly(Tally tally, List<RateLimiter> limiters) {
      this.tally = tally;
      this.limiters = List.copyOf(limiters);
    }

    @Override
    public void run() {
      if (tally.decide(limiters, 1).allowed()) {
        granted++;
      } else {
        refused++;
      }
    }
  }

  /**
   * Acquires a lease, renews the oldest held, and releases the oldest once more than
   * {@link #HOLD} are held: one store call a step, so each is timed on its own, and a few leases
   * always held, so that a lost one shows in the held count.
   */
  private static final class Leasing implements Call {
    private static final int HOLD = 2;
    private final ConcurrencyLimit limit;
    private final Duration ttl;
    /** Leases acknowledged and not given back, oldest first. */
    final ArrayDeque<Lease> holding = new ArrayDeque<>();
    /** Every fencing token acquired, in order. */
    final List<Long> tokens = new ArrayList<>();
    long acquired;
    long released;
    long acquiresFailed;
    long releasesFailed;
    long refused;
    /** Renews or releases of a lease held that the store answered false: the lease was lost. */
    long lost;
    String firstLost;
    /** The first fencing token not above its thread's previous one, described; null if none. */
    String tokenOutOfOrder;
    private int round;
    /** What the call under way does: "acquire", "renew" or "release". */
    private String calling;

    Leasing(ConcurrencyLimit limit, Duration ttl) {
      this.limit = limit;
      this.ttl = ttl;
    }

    @Override
    public void run() {
      calling = null;
      switch (round++ % 3) {
        case 0 -> acquire();
        case 1 -> {
          if (!holding.isEmpty()) {
            calling = "renew";
            if (!holding.peekFirst().renew(ttl)) {
              lost("renew", holding.peekFirst());
            }
          }
        }
        default -> {
          if (holding.size() > HOLD) {
            release();
          }
        }
      }
    }

    private void acquire() {
      calling = "acquire";
      Optional<Lease> lease = limit.tryAcquire(ttl);
      if (lease.isEmpty()) {
        refused++;
        return;
      }
      long token = lease.get().fencingToken();
      if (!tokens.isEmpty() && token <= tokens.get(tokens.size() - 1) && tokenOutOfOrder == null) {
        tokenOutOfOrder = "token " + token + " after " + tokens.get(tokens.size() - 1);
      }
      tokens.add(token);
      holding.addLast(lease.get());
      acquired++;
    }

    private void release() {
      // Out of the books before the call: a release that fails may or may not have freed the
      // permit, so the lease is no longer surely held; nor is it retried, since a retry's false
      // would not tell a lost lease from the failed call's own success.
      Lease oldest = holding.removeFirst();
      calling = "release";
      if (oldest.release()) {
        released++;
      } else {
        lost("release", oldest);
      }
    }

    private void lost(String what, Lease lease) {
      lost++;
      if (firstLost == null) {
        firstLost = what + " of lease " + lease.id() + " (token " + lease.fencingToken() + ") answered false";
      }
    }

    @Override
    public void failed() {
      if ("acquire".equals(calling)) {
        acquiresFailed++;
      } else if ("release".equals(calling)) {
        releasesFailed++;
      } // a failed renew changes no permit: the lease holds until an expiry the test never reaches
    }
  }

  private final class Worker<C extends Call> extends Thread {
    final C call;
    // written by this thread alone, read after join(), which orders them
    long failed;
    long longestNanos;
    /** How the longest call ended: "answered", or the failure's message. */
    String longestOutcome = "none";
    /** The longest call that failed as a bare StoreException (neither a timeout nor unreachable), and how. */
    long longestOtherFailureNanos;
    String longestOtherFailure = "none";
    Throwable unexpected;
    /** Read while the thread runs: when the last call succeeded, and the first after each failure. */
    volatile long lastSuccessAt = Long.MIN_VALUE;
    private final List<long[]> successesAfterFailures = new ArrayList<>(); // guarded by itself

    Worker(String name, C call) {
      super(name);
      setDaemon(true);
      this.call = call;
    }

    long firstSuccessSince(long nanoTime) {
      synchronized (successesAfterFailures) {
        for (long[] s : successesAfterFailures) {
          if (s[0] >= nanoTime) {
            return s[0];
          }
        }
      }
      long last = lastSuccessAt;
      return last >= nanoTime ? last : Long.MAX_VALUE;
    }

    @Override
    public void run() {
      boolean failing = true; // the first success is recorded too
      while (!stop) {
        long started = System.nanoTime();
        String outcome = "answered";
        try {
          call.run();
          long now = System.nanoTime();
          if (failing) {
            synchronized (successesAfterFailures) {
              successesAfterFailures.add(new long[] {now});
            }
            failing = false;
          }
          lastSuccessAt = now;
        } catch (StoreException e) {
          failed++;
          call.failed();
          failing = true;
          outcome = e.getClass().getSimpleName() + ": " + e.getMessage();
          long took = System.nanoTime() - started;
          if (e.getClass() == StoreException.class && took > longestOtherFailureNanos) {
            longestOtherFailureNanos = took;
            longestOtherFailure = outcome;
          }
        } catch (Throwable t) {
          unexpected = t;
          return;
        } finally {
          long took = System.nanoTime() - started;
          if (took > longestNanos) {
            longestNanos = took;
            longestOutcome = outcome;
          }
        }
        if (failing) {
          try {
            Thread.sleep(10); // the server is away: pace the retries, as a client would
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }
  }
}
