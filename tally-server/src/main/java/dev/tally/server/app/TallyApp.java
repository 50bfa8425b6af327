package dev.tally.server.app;

import dev.tally.AsyncCounters;
import dev.tally.ConcurrencyLimit;
import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.Durations;
import dev.tally.Expiry;
import dev.tally.FailurePolicy;
import dev.tally.KeyNotFoundException;
import dev.tally.Lease;
import dev.tally.Limit;
import dev.tally.LimitSpec;
import dev.tally.NotAnIntegerException;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.ReservationHandle;
import dev.tally.Tally;
import dev.tally.TransactionResult;
import dev.tally.spi.LimiterRecord;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.async.Lazy;
import dev.tally.server.async.Stages;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.Rules;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Tally's operations as the command line and the HTTP server offer them: counters, limiters,
 * transactions and the operator's named limits, each a method that takes parsed arguments and
 * returns a record, asynchronously. Both front ends are adapters over this one class (the server
 * calls it on its event loops, the command line waits), so their answers cannot drift apart.
 * It knows no wire format: a refusal or a failure completes the stage exceptionally, with a
 * {@link RequestException} that names its {@link Problem} or with Tally's own exception, and
 * {@link Problem#of} says what either means.
 */
public final class TallyApp implements AutoCloseable {
  /** The longest an {@code acquire} may wait; waiting holds no thread. */
  public static final Duration MAX_WAIT = Duration.ofMinutes(5);
  public static final int MAX_TRANSACTION_OPS = 1000;
  private static final String HEALTH_KEY = "tally.healthz";

  private final Tally tally;
  private final AsyncCounters counters;
  /** For health: never answered by a fail-open policy, or an outage would look healthy. */
  private final AsyncCounters probe;
  private final String storeName;
  private final NamedLimits namedLimits;
  private final LimiterCalls limiters;
  private final StoreTimings timings;
  private final String opId;
  /** The version this view's limiters give their limits ({@link RateLimiter#withVersion}); 0: none. */
  private final long limitsVersion;
  /** The app this is a view of (itself for the root): it owns the waits. */
  private final TallyApp root;
  private final Lazy<ScheduledExecutorService> waits;
  /** Acquires waiting for their next attempt, failed with shutting_down if closed first. */
  private final Set<CompletableFuture<?>> waiting = ConcurrentHashMap.newKeySet();

  /**
   * @param storeName the store's name in health and metrics (its URI scheme), or null
   * @param registry where store calls are timed, or null for nowhere
   * @param namedLimits the operator's rules, or null for none
   */
  public TallyApp(Tally tally, String storeName, MeterRegistry registry, NamedLimits namedLimits) {
    this(tally, storeName, registry, namedLimits, null);
  }

  /** @param countersPolicy for counters, or null: the store's (limiters always take the store's) */
  public TallyApp(Tally tally, String storeName, MeterRegistry registry, NamedLimits namedLimits,
      FailurePolicy countersPolicy) {
    this.tally = Objects.requireNonNull(tally, "tally");
    Counters sync = countersPolicy == null ? tally.counters() : tally.counters().withFailurePolicy(countersPolicy);
    this.counters = sync.async();
    this.probe = sync.withFailurePolicy(FailurePolicy.THROW).async();
    this.storeName = storeName == null ? tally.uri().split(":", 2)[0] : storeName;
    this.namedLimits = namedLimits;
    this.limiters = new LimiterCalls();
    this.timings = new StoreTimings(registry, this.storeName);
    this.opId = null;
    this.limitsVersion = 0;
    this.root = this;
    this.waits = new Lazy<>(() -> Executors.newSingleThreadScheduledExecutor(
        Lazy.daemonThreads("tally-acquire-waits-")));
  }

  private TallyApp(TallyApp root, String opId, long limitsVersion) {
    this.tally = root.tally;
    this.counters = opId == null ? root.counters : root.counters.withOperationId(opId);
    this.probe = root.probe;
    this.storeName = root.storeName;
    this.namedLimits = root.namedLimits;
    this.limiters = root.limiters;
    this.timings = root.timings;
    this.opId = opId;
    this.limitsVersion = limitsVersion;
    this.root = root;
    this.waits = root.waits;
  }

  /**
   * A view whose mutating calls carry the operation id {@code id} (HTTP's
   * {@code Idempotency-Key}, the command line's {@code --op-id}): a repeat within the store's
   * retention applies nothing and answers what the first call answered; the same id on another
   * operation is {@link Problem#UNPROCESSABLE}.
   *
   * @throws IllegalArgumentException if the id is empty, longer than 128 characters or not
   *     printable ASCII
   */
  public TallyApp withOperationId(String id) {
    return new TallyApp(root, id, limitsVersion);
  }

  public TallyApp withLimitsVersion(long version) {
    if (version < 0 || version > LimiterRecord.MAX_LIMITS_VERSION) {
      throw new RequestException("the limits' version must be from 0 to "
          + LimiterRecord.MAX_LIMITS_VERSION + " (2^45 - 1), not " + version);
    }
    return version == limitsVersion ? this : new TallyApp(root, opId, version);
  }

  /**
   * The operation's stage, timed, its value mapped by {@code ok} and its failure by
   * {@code failed}; a synchronous throw becomes a failed stage.
   */
  private <T, R> CompletionStage<R> run(String operation, Supplier<CompletionStage<T>> op,
      Function<T, R> ok, Function<Throwable, Throwable> failed) {
    long start = System.nanoTime();
    CompletionStage<T> stage;
    try {
      stage = op.get();
    } catch (RuntimeException e) {
      timings.failed(operation, e, start);
      return CompletableFuture.failedFuture(failed.apply(e));
    }
    return Stages.handle(stage, (value, failure) -> {
      if (failure != null) {
        Throwable e = Stages.unwrap(failure);
        timings.failed(operation, e, start);
        throw Stages.unchecked(failed.apply(e));
      }
      timings.done(operation, value, start);
      return ok.apply(value);
    });
  }

  private <T, R> CompletionStage<R> run(String operation, Supplier<CompletionStage<T>> op,
      Function<T, R> ok) {
    return run(operation, op, ok, e -> e);
  }

  private static <T> CompletionStage<T> refused(String message) {
    return CompletableFuture.failedFuture(new RequestException(message));
  }

  private static <T> CompletionStage<T> guard(Supplier<CompletionStage<T>> checked) {
    try {
      return checked.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // ------------------------------------------------------------------ counters

  /**
   * Adds {@code delta} (a {@code Long}, or a {@code Double} for a floating counter); a missing
   * counter starts at {@code dflt}, or, with {@code mustExist}, is not created (not found).
   */
  public CompletionStage<CounterValue> incr(String key, Number delta, Number dflt,
      boolean mustExist) {
    return add(key, delta, dflt, mustExist, false);
  }

  /** Subtracts {@code delta}; the default is not negated. */
  public CompletionStage<CounterValue> decr(String key, Number delta, Number dflt,
      boolean mustExist) {
    return add(key, delta, dflt, mustExist, true);
  }

  private CompletionStage<CounterValue> add(String key, Number delta, Number dflt,
      boolean mustExist, boolean negate) {
    Function<Throwable, Throwable> failed = e -> {
      if (e instanceof KeyNotFoundException k) {
        return mustExist(k);
      }
      if (e instanceof NotAnIntegerException) {
        // The core's message names the Java methods; here the fix is in what the caller types.
        return new RequestException(Problem.CONFLICT, "counter '" + key + "' holds a floating"
            + " value, and mustExist works on integer counters only; leave it out to add " + delta);
      }
      return e;
    };
    if (delta instanceof Double || dflt instanceof Double) {
      if (mustExist) {
        return refused("mustExist works with integer deltas only");
      }
      double d = negate ? -delta.doubleValue() : delta.doubleValue();
      return run("incr", () -> counters.incr(key, d, dflt.doubleValue()),
          v -> new CounterValue(key, v), failed);
    }
    long d = delta.longValue();
    long df = dflt.longValue();
    if (mustExist) {
      return run(negate ? "decr" : "incr",
          () -> negate ? counters.decrExisting(key, d) : counters.incrExisting(key, d),
          v -> new CounterValue(key, v), failed);
    }
    // As Redis's INCRBYFLOAT takes an integer: a floating counter stays floating and adds it.
    // The integer step failed without applying, so the floating one is the only one applied.
    double floating = negate ? -(double) d : d;
    return run(negate ? "decr" : "incr", () -> Stages.recover(
            Stages.<Number>widen(negate ? counters.decr(key, d, df) : counters.incr(key, d, df)),
            e -> e instanceof NotAnIntegerException,
            () -> Stages.widen(counters.incr(key, floating, (double) df))),
        v -> new CounterValue(key, v), failed);
  }

  /**
   * Adds {@code delta} (negated with {@code negate}) within {@code bounds}: refused or saturated
   * as {@link dev.tally.Bounds} says. Integer counters only.
   */
  public CompletionStage<BoundedValue> incrWithin(String key, long delta, long dflt,
      dev.tally.Bounds bounds, boolean negate) {
    Function<Throwable, Throwable> failed = e -> e instanceof NotAnIntegerException
        ? new RequestException(Problem.CONFLICT, "counter '" + key + "' holds a floating value,"
            + " and min and max work on integer counters only")
        : e;
    return run(negate ? "decr" : "incr",
        () -> negate ? counters.decr(key, delta, dflt, bounds) : counters.incr(key, delta, dflt, bounds),
        r -> new BoundedValue(key, r.value(), r.applied()), failed);
  }

  private static RequestException mustExist(KeyNotFoundException e) {
    return new RequestException(Problem.NOT_FOUND, "counter '" + e.key() + "' does not exist (or"
        + " has expired), and mustExist forbids creating it");
  }

  private static RequestException notFound(String key) {
    return new RequestException(Problem.NOT_FOUND, "counter '" + key + "' does not exist (or has"
        + " expired)");
  }

  public CompletionStage<CounterValue> get(String key) {
    return run("get", () -> integerOrFloating(counters.get(key), () -> counters.getDouble(key)),
        v -> present(key, v));
  }

  private static CounterValue present(String key, Number v) {
    return found(v != null, key, new CounterValue(key, v));
  }

  /** {@code result}, if the counter {@code key} was {@code found}. */
  private static <T> T found(boolean found, String key, T result) {
    if (!found) {
      throw notFound(key);
    }
    return result;
  }

  /**
   * An integer read, or the floating read if the counter holds a floating value. Tally's API
   * has no read that gives a counter's kind with its value; {@link NotAnIntegerException} is
   * its documented answer to an integer read of a floating counter, so that is what decides.
   */
  private static CompletionStage<Number> integerOrFloating(CompletionStage<OptionalLong> integer,
      Supplier<CompletionStage<OptionalDouble>> floating) {
    return integer.<Number>thenApply(v -> v.isPresent() ? (Number) v.getAsLong() : null)
        .exceptionallyCompose(e -> Stages.unwrap(e) instanceof NotAnIntegerException
            ? floating.get().thenApply(v -> v.isPresent() ? (Number) v.getAsDouble() : null)
            : CompletableFuture.failedFuture(Stages.unwrap(e)));
  }

  public CompletionStage<CounterValue> put(String key, Number value, Duration ttl) {
    return run("put", () -> value instanceof Double d
            ? counters.put(key, d, ttl) : counters.put(key, value.longValue(), ttl),
        v -> new CounterValue(key, value));
  }

  public CompletionStage<Added> add(String key, Number value, Duration ttl) {
    return run("add", () -> value instanceof Double d
            ? counters.add(key, d, ttl) : counters.add(key, value.longValue(), ttl),
        added -> new Added(key, added));
  }

  public CompletionStage<CounterValue> pop(String key) {
    return run("pop", () -> integerOrFloating(counters.pop(key), () -> counters.popDouble(key)),
        v -> present(key, v));
  }

  public CompletionStage<Deleted> delete(String key) {
    return run("delete", () -> counters.delete(key), deleted -> found(deleted, key, new Deleted(key)));
  }

  /** Sets the expiry of an existing counter (null: make it permanent); not found if missing. */
  public CompletionStage<CounterTtl> touch(String key, Duration ttl) {
    // As kept: a longer ttl than the store keeps is kept as its longest.
    Duration kept = ttl == null || ttl.compareTo(Counters.MAX_TTL) < 0 ? ttl : Counters.MAX_TTL;
    return run("touch", () -> counters.touch(key, ttl), touched -> found(touched, key, new CounterTtl(key, kept)));
  }

  /** The time left before a counter expires (null: never), in one read; not found if missing. */
  public CompletionStage<CounterTtl> ttl(String key) {
    return run("ttl", () -> counters.expiry(key),
        (Expiry e) -> found(e.exists(), key, new CounterTtl(key, e.remaining().orElse(null))));
  }

  /**
   * The live keys starting with {@code prefix} and sorting strictly after {@code after} (null:
   * from the first), sorted, at most {@code limit} of them: a page of a listing too long for one.
   */
  public CompletionStage<KeyList> keys(String prefix, String after, int limit) {
    return run("keys", () -> counters.keys(prefix), found -> {
      List<String> keys = new ArrayList<>(found.size());
      for (String k : found) {
        if (after == null || k.compareTo(after) > 0) {
          keys.add(k);
        }
      }
      keys.sort(null);
      int n = Math.min(limit, keys.size());
      boolean truncated = keys.size() > n;
      return new KeyList(prefix, List.copyOf(keys.subList(0, n)), truncated,
          truncated && n > 0 ? keys.get(n - 1) : null);
    });
  }

  public CompletionStage<TxResult> transaction(List<TxOp> ops) {
    if (ops.isEmpty()) {
      return refused("a transaction needs at least one operation in 'ops'");
    }
    if (ops.size() > MAX_TRANSACTION_OPS) {
      return refused("a transaction holds at most " + MAX_TRANSACTION_OPS + " operations, not "
          + ops.size());
    }
    for (int i = 0; i < ops.size(); i++) {
      TxOp o = ops.get(i);
      if (o.op().equals("put") && o.value() instanceof Double) {
        return refused("ops[" + i + "]: a transaction puts integer values only");
      }
      if (o.mustExist() && (o.delta() instanceof Double || o.dflt() instanceof Double)) {
        return refused("ops[" + i + "]: mustExist works with integer deltas only");
      }
      if (o.op().equals("decr") && !(o.delta() instanceof Double)
          && o.delta().longValue() == Long.MIN_VALUE) {
        return refused("ops[" + i + "]: a decr delta of Long.MIN_VALUE cannot be negated");
      }
    }
    return run("transaction", () -> counters.transaction(tx -> {
      for (TxOp o : ops) {
        boolean floating = o.delta() instanceof Double || o.dflt() instanceof Double;
        switch (o.op()) {
          case "incr", "decr" -> {
            boolean neg = o.op().equals("decr");
            if (floating) {
              double d = o.delta().doubleValue();
              tx.incr(o.key(), neg ? -d : d, o.dflt().doubleValue());
            } else if (o.mustExist()) {
              tx.incrExisting(o.key(), neg ? -o.delta().longValue() : o.delta().longValue());
            } else {
              tx.incr(o.key(), neg ? -o.delta().longValue() : o.delta().longValue(),
                  o.dflt().longValue());
            }
          }
          case "put" -> tx.put(o.key(), o.value().longValue(), o.ttl());
          case "delete" -> tx.delete(o.key());
          case "get" -> tx.get(o.key());
          default -> throw new RequestException("unknown op '" + o.op() + "'");
        }
      }
    }), result -> {
      List<TxResult.Item> items = new ArrayList<>(ops.size());
      for (int i = 0; i < ops.size(); i++) {
        TxOp o = ops.get(i);
        items.add(o.op().equals("delete") ? new TxResult.Item(o.key(), null, result.getLong(i) == 1)
            : new TxResult.Item(o.key(), result.isPresent(i) ? number(result, i) : null, null));
      }
      return new TxResult(items);
    }, e -> e instanceof KeyNotFoundException k ? mustExist(k) : e);
  }

  /** A result as its kind: what a floating operation gave is a {@code Double}. */
  private static Number number(TransactionResult r, int i) {
    try {
      return r.getLong(i);
    } catch (IllegalStateException floating) {
      return r.getDouble(i); // TransactionResult tells the kind only by this refusal
    }
  }

  // ------------------------------------------------------------------ limiters

  /** The limiter operations that answer at once. */
  public enum LimiterAction { TRY, PEEK, REFUND, RESET, RECONFIGURE, TOP_UP }

  /**
   * Runs {@code action} on the limiter {@code name} opened with {@code limits}. A denial is a
   * decision like a grant, not a failure.
   *
   * @param permits the permits to take or refund, or the units of a top-up
   */
  public CompletionStage<LimiterDecision> limiter(LimiterAction action, String name,
      List<LimitSpec> limits, long permits) {
    return guard(() -> {
      RateLimiter limiter = open(name, limits);
      if (permits < 0 && (action == LimiterAction.TRY || action == LimiterAction.REFUND)) {
        return negativePermits(permits);
      }
      return switch (action) {
        case TRY -> run("limiter.try", () -> limiters.decide(limiter, permits, opId),
            d -> new LimiterDecision(name, permits, limits, d, null, 0));
        case PEEK -> peek("limiter.peek", limiter, limits, limiters.decide(limiter, 0, null), null, 0);
        case REFUND -> peek("limiter.refund", limiter, limits, limiters.refund(limiter, permits, opId),
            "refunded", permits);
        case RESET -> peek("limiter.reset", limiter, limits, limiters.reset(limiter, opId), null, 0);
        case RECONFIGURE -> run("limiter.reconfigure", () -> limiters.reconfigure(limiter, opId,
                limits(limits)).thenCompose(next -> limiters.decide(next, 0, null)),
            d -> new LimiterDecision(name, 0, limits, d, null, 0));
        case TOP_UP -> {
          if (limits.size() != 1 || limits.get(0).kind() != LimitSpec.Kind.QUOTA) {
            yield refused("top-up needs exactly one quota limit, e.g. {\"quota\": \"1000/month\"}");
          }
          yield permits <= 0 ? refused("top-up units must be positive, not " + permits)
              : peek("limiter.top-up", limiter, limits, limiters.topUp((Quota) limiter, permits, opId),
                  "toppedUp", permits);
        }
      };
    });
  }

  /** One limiter of a joint decision: its name, limits and their version (0: the view's). */
  public record JointLimiter(String name, List<LimitSpec> limits, long version) {}

  /**
   * Takes {@code permits} from every one of {@code limiters} if every one allows, else from none
   * ({@link Tally#decide}). A refusal is a decision, not a failure.
   */
  public CompletionStage<JointLimiterDecision> decide(List<JointLimiter> limiters, long permits) {
    return guard(() -> {
      if (opId != null) {
        throw new RequestException("a joint decision takes no operation id (Idempotency-Key): it is"
            + " decided once, all or nothing, and a repeat is a new decision");
      }
      if (permits < 0) {
        return negativePermits(permits);
      }
      if (limiters.isEmpty()) {
        throw new RequestException("a joint decision needs at least one limiter, e.g. "
            + "{\"limiters\": [{\"name\": \"user:42\", \"limit\": {\"tokenBucket\": \"100/1m\"}}]}");
      }
      List<RateLimiter> handles = new ArrayList<>(limiters.size());
      for (JointLimiter l : limiters) {
        handles.add((l.version() == 0 ? this : withLimitsVersion(l.version())).open(l.name(), l.limits()));
      }
      return run("limiter.decide", () -> tally.decideAsync(handles, permits), joint -> {
        List<LimiterDecision> each = new ArrayList<>(limiters.size());
        for (int i = 0; i < limiters.size(); i++) {
          JointLimiter l = limiters.get(i);
          each.add(new LimiterDecision(l.name(), permits, l.limits(), joint.decision(i), null, 0));
        }
        return new JointLimiterDecision(permits, joint, each);
      });
    });
  }

  /** After {@code first}, a peek at the limiter: the answer of refund, reset and top-up. */
  private CompletionStage<LimiterDecision> peek(String op, RateLimiter limiter,
      List<LimitSpec> limits, CompletionStage<?> first, String givenAs, long given) {
    return run(op, () -> first.thenCompose(ignored -> limiters.decide(limiter, 0, null)),
        d -> new LimiterDecision(limiter.name(), 0, limits, d, givenAs, given));
  }

  private static <T> CompletionStage<T> negativePermits(long permits) {
    return refused("permits must be zero or more, not " + permits
        + "; use refund to give permits back");
  }

  /**
   * Takes {@code permits}, waiting up to {@code maxWait} for them without holding a thread: the
   * limiter says when they should be there, and the next attempt is scheduled for then.
   */
  public CompletableFuture<LimiterDecision> acquire(String name, List<LimitSpec> limits,
      long permits, Duration maxWait) {
    CompletableFuture<LimiterDecision> result = new CompletableFuture<>();
    try {
      if (permits < 0) {
        return TallyApp.<LimiterDecision>negativePermits(permits).toCompletableFuture();
      }
      Duration wait = maxWait(maxWait);
      RateLimiter limiter = open(name, limits);
      attempt(limiter, limits, permits, System.nanoTime() + wait.toNanos(), 1, result);
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
    return result;
  }

  /**
   * One attempt of an acquire. With an operation id, attempt {@code n} carries the id
   * {@code ID/n}: a replayed acquire walks through the decisions its first run recorded (the
   * denials, then the grant) and applies nothing, where one id for every attempt would replay the
   * first denial for ever.
   */
  private void attempt(RateLimiter limiter, List<LimitSpec> limits, long permits, long deadline,
      int n, CompletableFuture<LimiterDecision> result) {
    guard(() -> limiters.decide(limiter, permits, NamedLimits.partId(opId, n))).whenComplete((d, failure) -> {
      if (failure != null) {
        result.completeExceptionally(Stages.unwrap(failure));
        return;
      }
      try {
        long wait = d.retryAfterNanos();
        if (d.allowed() || wait == Decision.NEVER || wait > deadline - System.nanoTime()) {
          result.complete(new LimiterDecision(limiter.name(), permits, limits, d, null, 0));
          return;
        }
        retryLater(result, () -> attempt(limiter, limits, permits, deadline, n + 1, result),
            Math.max(wait, 1_000));
      } catch (RuntimeException e) {
        result.completeExceptionally(e);
      }
    });
  }

  private static Duration maxWait(Duration maxWait) {
    Duration wait = maxWait == null ? Duration.ZERO : maxWait;
    if (wait.compareTo(MAX_WAIT) > 0) {
      throw new RequestException("maxWait " + Durations.format(wait) + " is longer than the "
          + Durations.format(MAX_WAIT) + " allowed");
    }
    return wait;
  }

  /** Runs {@code next} after {@code nanos}; {@code result} fails with shutting_down if closed first. */
  @SuppressWarnings("CollectionUndefinedEquality") // the set holds each waiting future by identity, as meant
  private void retryLater(CompletableFuture<?> result, Runnable next, long nanos) {
    try {
      if (root.waiting.add(result)) {
        result.whenComplete((r, f) -> root.waiting.remove(result));
      }
      waits.get().schedule(next, nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closing) {
      result.completeExceptionally(shuttingDown());
    }
  }

  /** The refusal of a call cut short by shutdown: nothing was taken, it may be sent again. */
  public static RequestException shuttingDown() {
    return new RequestException(Problem.SHUTTING_DOWN,
        "the server is shutting down; retry elsewhere");
  }

  private RateLimiter open(String name, List<LimitSpec> limits) {
    if (limits.isEmpty()) {
      throw new RequestException("no limit given: add one, e.g. {\"limit\": {\"tokenBucket\":"
          + " \"100/1m\"}} or --token-bucket 100/1m");
    }
    LimitSpec first = limits.get(0);
    // A Quota handle, so that top-up works; same state and key as a plain limiter.
    RateLimiter limiter = limits.size() == 1 && first.kind() == LimitSpec.Kind.QUOTA
        ? tally.quota(name, first.limit().limit(), first.limit().period(), first.limit().zone())
        : tally.limiter(name, limits(limits));
    return limitsVersion == 0 ? limiter : limiter.withVersion(limitsVersion);
  }

  private static Limit[] limits(List<LimitSpec> specs) {
    return specs.stream().map(LimitSpec::limit).toArray(Limit[]::new);
  }

  // ------------------------------------------------------------------ reservations

  /**
   * Takes {@code estimate} permits of the limiter {@code name} and holds them for up to
   * {@code ttl}, until settled ({@link #settle}); one never settled is settled at its estimate. With
   * an operation id the id is the reservation's, so a retried reserve takes once and answers the
   * same. A refusal holds nothing and carries no id.
   */
  public CompletionStage<LimiterDecision> reserve(String name, List<LimitSpec> limits, long estimate,
      Duration ttl) {
    return guard(() -> {
      if (ttl == null) {
        throw new RequestException("a reservation needs a ttl, how long it may stay open before it is"
            + " settled at its estimate, e.g. \"5m\"");
      }
      RateLimiter limiter = open(name, limits);
      RateLimiter handle = opId == null ? limiter : limiter.withOperationId(opId);
      return run("limiter.reserve", () -> limiters.step(() -> handle.reserve(estimate, ttl)),
          r -> new LimiterDecision(name, estimate, limits, r.decision(), null, 0, r.granted() ? r.id() : null));
    });
  }

  /**
   * Closes the reservation {@code id} of the limiter {@code name} at its real cost {@code actual}
   * (0 cancels it). An operation id adds nothing: the reservation's id makes a repeated settlement
   * apply once already. Closed before, at another amount, is {@link Problem#RESERVATION_GONE}.
   */
  public CompletionStage<LimiterDecision> settle(String name, List<LimitSpec> limits, String id, long actual) {
    return guard(() -> {
      if (actual < 0) {
        throw new RequestException("actual must be zero or more, not " + actual
            + ": what the work really cost; 0 cancels the reservation");
      }
      ReservationHandle reservation = open(name, limits).reservation(id);
      return run("limiter.settle", () -> limiters.step(() -> reservation.settle(actual)),
          d -> new LimiterDecision(name, actual, limits, d, "settled", actual, id));
    });
  }

  // ------------------------------------------------------------------ concurrency limits

  /** The longest a waiting lease acquire goes without asking the store, as the library's waiters. */
  private static final long MAX_LEASE_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /**
   * Leases {@code weight} permits of the concurrency limit {@code name} for {@code ttl}, waiting up
   * to {@code maxWait} for them without holding a thread: {@link ConcurrencyLimit} has only a
   * blocking form, so each attempt is one store step on a pool, and the next is scheduled after a
   * backoff that doubles from 1 ms to 50 ms. No permit within {@code maxWait} is
   * {@link Problem#DENIED}.
   */
  public CompletableFuture<ConcurrencyLease> acquireLease(String name, long maxPermits, long weight,
      Duration ttl, Duration maxWait) {
    CompletableFuture<ConcurrencyLease> result = new CompletableFuture<>();
    try {
      Duration wait = maxWait(maxWait);
      ConcurrencyLimit limit = concurrency(name, maxPermits, leaseTtl(ttl));
      if (weight < 1 || weight > maxPermits) {
        throw new RequestException("weight must be 1 to maxPermits (" + maxPermits + "), not " + weight);
      }
      String denied = "the concurrency limit '" + name + "' has not " + weight + " of its " + maxPermits
          + " permits free" + (wait.isZero() ? " now" : " within " + Durations.format(wait))
          + "; a lease frees its permits when released or when it expires";
      attemptLease(limit, weight, ttl, System.nanoTime() + wait.toNanos(), TimeUnit.MILLISECONDS.toNanos(1),
          denied, result);
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
    return result;
  }

  private void attemptLease(ConcurrencyLimit limit, long weight, Duration ttl, long deadline, long backoff,
      String denied, CompletableFuture<ConcurrencyLease> result) {
    long start = System.nanoTime();
    limiters.step(() -> limit.tryAcquire(weight, ttl)).whenComplete((lease, failure) -> {
      if (failure != null) {
        timings.failed("concurrency.acquire", Stages.unwrap(failure), start);
        result.completeExceptionally(Stages.unwrap(failure));
        return;
      }
      timings.done("concurrency.acquire", lease, start);
      if (lease.isPresent()) {
        if (!result.complete(ConcurrencyLease.of(limit.name(), lease.get()))) {
          lease.get().release(); // the caller is gone (shutdown): nobody would release it
        }
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        result.completeExceptionally(new RequestException(Problem.DENIED, denied));
        return;
      }
      retryLater(result, () -> attemptLease(limit, weight, ttl, deadline,
          Math.min(backoff * 2, MAX_LEASE_BACKOFF_NANOS), denied, result), Math.min(backoff, left));
    });
  }

  /**
   * Extends the lease {@code id} of the concurrency limit {@code name} to {@code ttl} from now on
   * the store's clock; a lease released or expired is {@link Problem#LEASE_GONE}.
   */
  public CompletionStage<ConcurrencyLease> renewLease(String name, long maxPermits, String id, Duration ttl) {
    return concurrencyStep("concurrency.renew", () -> {
      Lease lease = concurrency(name, maxPermits, leaseTtl(ttl)).lease(id);
      return () -> {
        if (!lease.renew(ttl)) {
          throw new RequestException(Problem.LEASE_GONE, "lease '" + id + "' of the concurrency limit '"
              + name + "' was released or has expired, and cannot be renewed: its permits may be another"
              + " holder's already; stop the work, or acquire a new lease");
        }
        return ConcurrencyLease.of(name, lease);
      };
    });
  }

  public CompletionStage<LeaseReleased> releaseLease(String name, long maxPermits, String id) {
    return concurrencyStep("concurrency.release", () -> {
      Lease lease = concurrency(name, maxPermits, null).lease(id);
      return () -> new LeaseReleased(name, id, lease.release());
    });
  }

  public CompletionStage<ConcurrencyInUse> leasesInUse(String name, long maxPermits) {
    return concurrencyStep("concurrency.in-use", () -> {
      ConcurrencyLimit limit = concurrency(name, maxPermits, null);
      return () -> new ConcurrencyInUse(name, maxPermits, limit.inUse());
    });
  }

  /** Checks the input on the caller's thread (bad input reaches no pool), then runs the step on the pool. */
  private <T> CompletionStage<T> concurrencyStep(String operation, Supplier<Supplier<T>> checked) {
    return guard(() -> {
      Supplier<T> step = checked.get();
      return run(operation, () -> limiters.step(step), v -> v);
    });
  }

  private static Duration leaseTtl(Duration ttl) {
    if (ttl == null) {
      throw new RequestException("a lease needs a ttl, the longest it is held unless renewed, e.g. 30s");
    }
    return ttl;
  }

  /** The limit's handle, once the input every step shares is checked; {@code ttl} null: none to check. */
  private ConcurrencyLimit concurrency(String name, long maxPermits, Duration ttl) {
    if (opId != null) {
      throw new RequestException("concurrency limits take no operation id (Idempotency-Key, --op-id):"
          + " renew and release are safe to repeat as they are, and a repeated acquire is a new lease"
          + " (one nobody uses expires after its ttl)");
    }
    if (maxPermits < 1) {
      throw new RequestException("maxPermits must be 1 or more, not " + maxPermits);
    }
    if (ttl != null && (ttl.isNegative() || ttl.isZero())) {
      throw new RequestException("a lease's ttl must be positive, not " + Durations.format(ttl));
    }
    return tally.concurrency(name, maxPermits);
  }

  // ------------------------------------------------------------------ named limits

  /**
   * Checks {@code descriptors} of {@code domain} against the operator's rules, taking
   * {@code hitsAddend} (0 means 1) from each limit that matches.
   */
  public CompletionStage<NamedLimitResult> rateLimit(String domain, List<Descriptor> descriptors,
      long hitsAddend) {
    return guard(() -> {
      NamedLimits limits = namedLimits();
      if (!limits.rules().current().hasDomain(domain)) {
        Set<String> d = limits.rules().current().domains();
        throw new RequestException(Problem.NOT_FOUND, "no rules for domain '" + domain
            + "'; the rules define " + (d.isEmpty() ? "no domain yet" : "domains " + String.join(", ", d)));
      }
      return run("ratelimit", () -> limits.check(domain, descriptors, hitsAddend, opId),
          o -> new NamedLimitResult(o, descriptors));
    });
  }

  public Rules.Status rules() {
    return namedLimits().rules().status();
  }

  private NamedLimits namedLimits() {
    if (namedLimits == null) {
      throw new RequestException(Problem.NOT_FOUND, "this server has no named limits: start it"
          + " with --rules FILE_OR_DIRECTORY (see docs/envoy.md)");
    }
    return namedLimits;
  }

  // ------------------------------------------------------------------ health

  /** A cheap real operation on the store, a read of one key; the stage never fails. */
  public CompletionStage<Health> health() {
    long start = System.nanoTime();
    return run("healthz", () -> probe.getDouble(HEALTH_KEY), v -> (Throwable) null)
        .exceptionally(Stages::unwrap)
        .thenApply(e -> new Health(storeName, (System.nanoTime() - start) / 1000, e));
  }

  /** Stops scheduling waits; acquires still waiting fail with {@link Problem#SHUTTING_DOWN}. */
  @Override
  public void close() {
    if (root != this) {
      return; // a view: the root owns the waits and the pool
    }
    ScheduledExecutorService w = waits.made();
    if (w != null) {
      w.shutdownNow(); // the attempts it held will never run: answer their callers here
    }
    for (CompletableFuture<?> result : waiting) {
      result.completeExceptionally(shuttingDown());
    }
    limiters.close();
  }
}
