package dev.tally.internal;

import dev.tally.AsyncRateLimiter;
import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.LeasedRateLimiter;
import dev.tally.JointDecision;
import dev.tally.Limit;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.Reservation;
import dev.tally.ReservationHandle;
import dev.tally.StoreException;
import dev.tally.TimeSource;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.OperationId;
import java.util.concurrent.CompletionStage;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterShortcut;
import dev.tally.spi.Store;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * {@link RateLimiter} (and {@link Quota}) over a store: validates, applies the failure policy,
 * and takes the store's {@link LimiterShortcut} for acquires where it has one.
 */
final class DefaultRateLimiter implements Quota {
  /** What a fail-closed limiter tells callers to wait: the store's state is unknown. */
  private static final long FAIL_CLOSED_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final LimiterMachine machine;
  private final Store store;
  private final AsyncStore asyncStore;
  private final FailurePolicy policy;
  private final Failures failures;
  private final LimiterShortcut shortcut; // the store's fast path for acquires, if it has one
  private final TimeSource clock; // the store's clock, which leases time their blocks by
  private final Duration retention; // the store's operation-id retention, which bounds a reservation's ttl
  private final String operationId; // withOperationId's id, which names a reservation; null without

  DefaultRateLimiter(LimiterMachine machine, Store store, AsyncStore asyncStore, FailurePolicy policy,
      Failures failures, TimeSource clock, Duration retention) {
    this(machine, store, asyncStore, policy, failures, clock, retention, null);
  }

  private DefaultRateLimiter(LimiterMachine machine, Store store, AsyncStore asyncStore, FailurePolicy policy,
      Failures failures, TimeSource clock, Duration retention, String operationId) {
    this.clock = Objects.requireNonNull(clock, "clock");
    this.retention = Objects.requireNonNull(retention, "retention");
    this.operationId = operationId;
    this.machine = machine;
    this.store = store;
    this.asyncStore = asyncStore;
    this.policy = Objects.requireNonNull(policy, "policy");
    this.failures = failures;
    this.shortcut = store.shortcut(machine);
  }

  @Override
  public String name() {
    return machine.key();
  }

  @Override
  public List<Limit> limits() {
    return machine.limits();
  }

  @Override
  public long version() {
    return machine.version();
  }

  @Override
  public RateLimiter withVersion(long version) {
    return new DefaultRateLimiter(machine.withVersion(version), store, asyncStore, policy, failures, clock, retention,
        operationId);
  }

  @Override
  public FailurePolicy failurePolicy() {
    return policy;
  }

  @Override
  public RateLimiter withFailurePolicy(FailurePolicy newPolicy) {
    return new DefaultRateLimiter(machine, store, asyncStore, newPolicy, failures, clock, retention, operationId);
  }

  @Override
  public boolean tryAcquire() {
    return tryAcquire(1);
  }

  @Override
  public boolean tryAcquire(long permits) {
    checkPermits(permits);
    if (shortcut != null && permits > 0) {
      try {
        return shortcut.tryAcquire(permits);
      } catch (StoreException e) {
        return answerFailure(LimiterOperation.ACQUIRE, e).allowed();
      }
    }
    return run(LimiterOperation.ACQUIRE, permits).allowed();
  }

  @Override
  public Decision decide(long permits) {
    checkPermits(permits);
    return run(LimiterOperation.ACQUIRE, permits);
  }

  @Override
  public boolean acquire(long permits, Duration maxWait) throws InterruptedException {
    checkPermits(permits);
    Objects.requireNonNull(maxWait, "maxWait");
    long deadline = System.nanoTime() + Math.max(0, maxWait.toNanos());
    for (;;) {
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
      Decision d = run(LimiterOperation.ACQUIRE, permits);
      if (d.allowed()) {
        return true;
      }
      long wait = d.retryAfterNanos();
      if (wait == Decision.NEVER || wait > deadline - System.nanoTime()) {
        return false;
      }
      // Sleep until the units should be there; another caller may take them first, then retry.
      TimeUnit.NANOSECONDS.sleep(Math.max(wait, 1_000));
    }
  }

  @Override
  public void refund(long permits) {
    checkPermits(permits);
    run(LimiterOperation.REFUND, permits);
  }

  @Override
  public Decision charge(long permits) {
    checkPermits(permits);
    return run(LimiterOperation.CHARGE, permits);
  }

  @Override
  public long available() {
    return run(LimiterOperation.PEEK, 1).remaining();
  }

  @Override
  public void reset() {
    run(LimiterOperation.RESET, 0);
  }

  @Override
  public RateLimiter reconfigure(Limit... limits) {
    DefaultRateLimiter next = new DefaultRateLimiter(
        machine.withLimits(Arrays.asList(limits.clone())), store, asyncStore, policy, failures, clock, retention,
        operationId);
    next.run(LimiterOperation.RECONFIGURE, 0);
    return next;
  }

  @Override
  public void topUp(long units) {
    checkPermits(units);
    run(LimiterOperation.TOP_UP, units);
  }

  @Override
  public RateLimiter withOperationId(String id) {
    OperationId opId = OperationId.of(id);
    return new DefaultRateLimiter(machine, new OnceStore(store, opId), new OnceStore.Async(asyncStore, opId),
        policy, failures, clock, retention, id);
  }

  @Override
  public Reservation reserve(long estimate, Duration ttl) {
    return reservations().reserve(operationId, estimate, ttl);
  }

  @Override
  public ReservationHandle reservation(String id) {
    return reservations().handle(id);
  }

  /** The reservations of this limiter: each step carries an id of its own, derived from the reservation's. */
  private Reservations reservations() {
    return new Reservations(store, machine, retention);
  }

  @Override
  public AsyncRateLimiter async() {
    return new Async();
  }

  @Override
  public LeasedRateLimiter leased(long maxBlock, Duration leaseTime) {
    return new LeasedLimiter(this, e -> answerFailure(LimiterOperation.ACQUIRE, e), clock, failures.listener(),
        maxBlock, leaseTime);
  }

  @Override
  public Decision peek() {
    return run(LimiterOperation.PEEK, 0);
  }

  private Decision run(LimiterOperation op, long permits) {
    try {
      return machine.report(store.limit(machine, op, permits));
    } catch (StoreException e) {
      return answerFailure(op, e);
    }
  }

  /** The failure policy's answer for a store that failed, or the failure rethrown. */
  Decision answerFailure(LimiterOperation op, StoreException e) {
    failures.answerOrThrow(policy, true, "limiter." + op.name().toLowerCase(Locale.ROOT), machine.key(), e);
    Decision full = machine.full();
    return (policy == FailurePolicy.FAIL_OPEN
        ? full
        : new Decision(false, 0, full.limit(), FAIL_CLOSED_RETRY_NANOS, FAIL_CLOSED_RETRY_NANOS,
            full.limitIndex(), failedClosed(full))).answeredByFailurePolicy();
  }

  /** Each limit as a fail-closed answer reports it: nothing left, until the retry. */
  private static long[] failedClosed(Decision full) {
    List<Decision.LimitState> states = full.limits();
    if (states.size() == 1) {
      return null;
    }
    long[] perLimit = new long[3 * states.size()];
    for (int i = 0; i < states.size(); i++) {
      perLimit[3 * i + 1] = states.get(i).limit();
      perLimit[3 * i + 2] = FAIL_CLOSED_RETRY_NANOS;
    }
    return perLimit;
  }

  private CompletionStage<Decision> runAsync(LimiterOperation op, long permits) {
    return Failures.onStoreFailure(asyncStore.limit(machine, op, permits).thenApply(machine::report),
        e -> answerFailure(op, e));
  }

  /** The store this handle calls: {@link Tally}'s own, unless wrapped for an operation id. */
  Store store() {
    return store;
  }

  /**
   * {@code limiters}, which share {@code store} and are checked, decided as one: see
   * {@link dev.tally.Tally#decide}.
   */
  static JointDecision decideAll(List<DefaultRateLimiter> limiters, Store store, long permitsEach) {
    Decision[] ds;
    try {
      ds = store.limitAll(machines(limiters), permitsEach);
    } catch (StoreException e) {
      ds = answerFailures(limiters, e);
    }
    return joint(limiters, ds);
  }

  /** The asynchronous form of {@link #decideAll}. */
  static CompletionStage<JointDecision> decideAllAsync(List<DefaultRateLimiter> limiters, AsyncStore store,
      long permitsEach) {
    return Failures.onStoreFailure(store.limitAll(machines(limiters), permitsEach), e -> answerFailures(limiters, e))
        .thenApply(ds -> joint(limiters, ds));
  }

  static List<LimiterCall> machines(List<DefaultRateLimiter> limiters) {
    List<LimiterCall> calls = new ArrayList<>(limiters.size());
    for (DefaultRateLimiter l : limiters) {
      calls.add(l.machine);
    }
    return calls;
  }

  private static Decision[] answerFailures(List<DefaultRateLimiter> limiters, StoreException e) {
    Decision[] ds = new Decision[limiters.size()];
    for (int i = 0; i < ds.length; i++) {
      ds[i] = limiters.get(i).answerFailure(LimiterOperation.ACQUIRE, e);
    }
    return ds;
  }

  private static JointDecision joint(List<DefaultRateLimiter> limiters, Decision[] ds) {
    if (ds.length != limiters.size()) {
      throw new IllegalStateException("the store answered " + ds.length + " decisions for "
          + limiters.size() + " limiters");
    }
    List<String> names = new ArrayList<>(ds.length);
    for (int i = 0; i < ds.length; i++) {
      DefaultRateLimiter l = limiters.get(i);
      l.machine.report(ds[i]);
      names.add(l.machine.key());
    }
    return new JointDecision(names, Arrays.asList(ds));
  }

  /** The asynchronous view: the same machine, store and policy. */
  private final class Async implements AsyncRateLimiter {
    @Override
    public RateLimiter sync() {
      return DefaultRateLimiter.this;
    }

    @Override
    public String name() {
      return machine.key();
    }

    @Override
    public AsyncRateLimiter withOperationId(String id) {
      return DefaultRateLimiter.this.withOperationId(id).async();
    }

    @Override
    public CompletionStage<Boolean> tryAcquire(long permits) {
      checkPermits(permits);
      return runAsync(LimiterOperation.ACQUIRE, permits).thenApply(Decision::allowed);
    }

    @Override
    public CompletionStage<Decision> decide(long permits) {
      checkPermits(permits);
      return runAsync(LimiterOperation.ACQUIRE, permits);
    }

    @Override
    public CompletionStage<Void> refund(long permits) {
      checkPermits(permits);
      return runAsync(LimiterOperation.REFUND, permits).thenApply(d -> null);
    }

    @Override
    public CompletionStage<Decision> charge(long permits) {
      checkPermits(permits);
      return runAsync(LimiterOperation.CHARGE, permits);
    }

    @Override
    public CompletionStage<Long> available() {
      return runAsync(LimiterOperation.PEEK, 1).thenApply(Decision::remaining);
    }

    @Override
    public CompletionStage<Void> reset() {
      return runAsync(LimiterOperation.RESET, 0).thenApply(d -> null);
    }
  }

  private static void checkPermits(long permits) {
    if (permits < 0) {
      throw new IllegalArgumentException("permits must be zero or more, not " + permits
          + "; use refund() to give units back");
    }
  }

  @Override
  public String toString() {
    return "RateLimiter[" + machine.key() + ", " + machine.limits()
        + (machine.version() == 0 ? "" : ", version " + machine.version()) + "]";
  }
}
