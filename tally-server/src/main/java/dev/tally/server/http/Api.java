package dev.tally.server.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.AsyncCounters;
import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.KeyNotFoundException;
import dev.tally.Limit;
import dev.tally.NotAnIntegerException;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TransactionResult;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Every counter and limiter operation of the HTTP API as a method that returns its {@link Reply},
 * asynchronously. The HTTP server calls these on its event loops (the stores' asynchronous API
 * never blocks the caller), and the command line waits for them, so a command's {@code --json}
 * output, its exit code and the HTTP answer to the same operation cannot drift apart. Arguments
 * arrive parsed; Tally itself checks keys and values, and every exception becomes a reply: a
 * returned stage always completes normally.
 */
public final class Api implements AutoCloseable {
  /** The longest an HTTP {@code acquire} may wait; waiting holds no thread. */
  public static final Duration MAX_WAIT = Duration.ofMinutes(5);
  /** The most operations one transaction may hold. */
  public static final int MAX_TRANSACTION_OPS = 1000;
  private static final String HEALTH_KEY = "tally.healthz";

  private final Tally tally;
  private final AsyncCounters counters;
  /** For /healthz: never answered by a fail-open policy, or an outage would look healthy. */
  private final AsyncCounters probe;
  private final String storeName;
  private final LimiterCalls limiters;
  private final StoreTimings timings;
  /** The operation id every mutating call of this view carries, or null. */
  private final String opId;
  /** The Api this is a view of (itself for the root): it owns the waits. */
  private final Api root;
  private volatile ScheduledExecutorService waits;
  /** Acquires waiting for their next attempt, answered 503 if the server closes first. */
  private final Set<CompletableFuture<Reply>> waiting = ConcurrentHashMap.newKeySet();

  /**
   * @param tally the store
   * @param storeName the store's name in /healthz and metrics (its URI scheme), or null
   * @param registry where store calls are timed, or null for nowhere
   */
  public Api(Tally tally, String storeName, MeterRegistry registry) {
    this.tally = Objects.requireNonNull(tally, "tally");
    Counters sync = tally.counters();
    this.counters = sync.async();
    this.probe = sync.withFailurePolicy(FailurePolicy.THROW).async();
    this.storeName = storeName == null ? tally.uri().split(":", 2)[0] : storeName;
    this.limiters = new LimiterCalls();
    this.timings = new StoreTimings(registry, this.storeName);
    this.opId = null;
    this.root = this;
  }

  private Api(Api root, String opId) {
    this.tally = root.tally;
    this.counters = root.counters.withOperationId(opId);
    this.probe = root.probe;
    this.storeName = root.storeName;
    this.limiters = root.limiters;
    this.timings = root.timings;
    this.opId = opId;
    this.root = root;
  }

  /**
   * A view whose mutating calls carry the operation id {@code id} (the HTTP
   * {@code Idempotency-Key}, the command line's {@code --op-id}): a repeat within the store's
   * retention applies nothing and answers what the first call answered; the same id on another
   * operation is 422.
   *
   * @throws IllegalArgumentException if the id is empty, longer than 128 characters or not
   *     printable ASCII
   */
  public Api withOperationId(String id) {
    return new Api(root, id);
  }

  /** The operation's stage mapped to a reply; a synchronous throw or a failure becomes one too. */
  private <T> CompletionStage<Reply> run(String operation, Supplier<CompletionStage<T>> op,
      Function<T, Reply> ok, Function<Throwable, Reply> failed) {
    long start = System.nanoTime();
    CompletionStage<T> stage;
    try {
      stage = op.get();
    } catch (RuntimeException e) {
      timings.failed(operation, e, start);
      return CompletableFuture.completedFuture(failed.apply(e));
    }
    return Stages.handle(stage, (value, failure) -> {
      if (failure != null) {
        Throwable e = unwrap(failure);
        timings.failed(operation, e, start);
        return failed.apply(e);
      }
      timings.done(operation, value, start);
      try {
        return ok.apply(value);
      } catch (RuntimeException e) {
        return failed.apply(e);
      }
    });
  }

  private <T> CompletionStage<Reply> run(String operation, Supplier<CompletionStage<T>> op,
      Function<T, Reply> ok) {
    return run(operation, op, ok, Reply::error);
  }

  /** The cause a stage failed with, without the wrappers of {@code CompletableFuture}. */
  static Throwable unwrap(Throwable t) {
    Throwable e = t;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static CompletionStage<Reply> done(Reply reply) {
    return CompletableFuture.completedFuture(reply);
  }

  // ------------------------------------------------------------------ counters

  /**
   * Adds {@code delta} (a {@code Long}, or a {@code Double} for a floating counter); a missing
   * counter starts at {@code dflt}, or, with {@code mustExist}, is not created (404).
   */
  public CompletionStage<Reply> incr(String key, Number delta, Number dflt, boolean mustExist) {
    return add(key, delta, dflt, mustExist, false);
  }

  /** Subtracts {@code delta}; the default is not negated. */
  public CompletionStage<Reply> decr(String key, Number delta, Number dflt, boolean mustExist) {
    return add(key, delta, dflt, mustExist, true);
  }

  private CompletionStage<Reply> add(String key, Number delta, Number dflt, boolean mustExist,
      boolean negate) {
    Function<Throwable, Reply> failed = e -> {
      if (e instanceof KeyNotFoundException k) {
        return mustExist(k);
      }
      if (e instanceof NotAnIntegerException) {
        // The core's message names the Java methods; here the fix is in what the caller types.
        return Reply.error(Problem.CONFLICT, "counter '" + key + "' holds a floating value;"
            + " give the delta as a decimal (" + delta + ".0, not " + delta + ") to change it");
      }
      return Reply.error(e);
    };
    if (delta instanceof Double || dflt instanceof Double) {
      if (mustExist) {
        return done(Reply.error(Problem.BAD_REQUEST, "mustExist works with integer deltas only"));
      }
      double d = negate ? -delta.doubleValue() : delta.doubleValue();
      return run("incr", () -> counters.incr(key, d, dflt.doubleValue()),
          v -> Reply.ok(counter(key, v)), failed);
    }
    long d = delta.longValue();
    long df = dflt.longValue();
    return run(negate ? "decr" : "incr", () -> mustExist
            ? (negate ? counters.decrExisting(key, d) : counters.incrExisting(key, d))
            : (negate ? counters.decr(key, d, df) : counters.incr(key, d, df)),
        v -> Reply.ok(counter(key, v)), failed);
  }

  private static Reply mustExist(KeyNotFoundException e) {
    return Reply.error(Problem.NOT_FOUND, "counter '" + e.key() + "' does not exist (or has"
        + " expired), and mustExist forbids creating it");
  }

  /** The value of a counter, integer or floating; 404 if it is missing or expired. */
  public CompletionStage<Reply> get(String key) {
    return run("get", () -> integerOrFloating(counters.get(key), () -> counters.getDouble(key)),
        v -> v == null ? notFound(key) : Reply.ok(counter(key, v)));
  }

  /** An integer read, or the floating read if the counter holds a floating value. */
  private static CompletionStage<Number> integerOrFloating(CompletionStage<OptionalLong> integer,
      Supplier<CompletionStage<OptionalDouble>> floating) {
    return integer.<Number>thenApply(v -> v.isPresent() ? (Number) v.getAsLong() : null)
        .exceptionallyCompose(e -> unwrap(e) instanceof NotAnIntegerException
            ? floating.get().thenApply(v -> v.isPresent() ? (Number) v.getAsDouble() : null)
            : CompletableFuture.failedFuture(unwrap(e)));
  }

  /** Sets a counter, expiring after {@code ttl} (null: never). */
  public CompletionStage<Reply> put(String key, Number value, Duration ttl) {
    return run("put", () -> value instanceof Double d
            ? counters.put(key, d, ttl) : counters.put(key, value.longValue(), ttl),
        v -> Reply.ok(counter(key, value)));
  }

  /** Sets a counter only if it is missing or expired: {@code {"added": true|false}}. */
  public CompletionStage<Reply> add(String key, Number value, Duration ttl) {
    return run("add", () -> value instanceof Double d
            ? counters.add(key, d, ttl) : counters.add(key, value.longValue(), ttl),
        added -> {
          ObjectNode body = Json.object().put("key", key);
          body.put("added", added);
          return Reply.ok(body);
        });
  }

  /** Reads and deletes a counter in one step; 404 if it is missing. */
  public CompletionStage<Reply> pop(String key) {
    return run("pop", () -> integerOrFloating(counters.pop(key), () -> counters.popDouble(key)),
        v -> v == null ? notFound(key) : Reply.ok(counter(key, v)));
  }

  /** Deletes a counter; 404 if there was none. */
  public CompletionStage<Reply> delete(String key) {
    return run("delete", () -> counters.delete(key), deleted -> {
      if (!deleted) {
        return notFound(key);
      }
      ObjectNode body = Json.object().put("key", key);
      body.put("deleted", true);
      return Reply.ok(body);
    });
  }

  /** Sets the expiry of an existing counter (null: make it permanent); 404 if missing. */
  public CompletionStage<Reply> touch(String key, Duration ttl) {
    // As kept: a longer ttl than the store keeps is kept as its longest.
    Duration kept = ttl == null || ttl.compareTo(Counters.MAX_TTL) < 0 ? ttl : Counters.MAX_TTL;
    return run("touch", () -> counters.touch(key, ttl),
        touched -> touched ? Reply.ok(ttlBody(key, kept)) : notFound(key));
  }

  /** The time left before a counter expires ({@code "ttl": null}: never); 404 if missing. */
  public CompletionStage<Reply> ttl(String key) {
    return run("ttl", () -> counters.ttl(key).thenCompose(ttl -> ttl.isPresent()
            ? CompletableFuture.completedFuture(ttl)
            : counters.getDouble(key).thenApply(v -> v.isPresent() ? ttl : (Optional<Duration>) null)),
        ttl -> ttl == null ? notFound(key) : Reply.ok(ttlBody(key, ttl.orElse(null))));
  }

  /** The live keys starting with {@code prefix}, sorted, at most {@code limit} of them. */
  public CompletionStage<Reply> keys(String prefix, int limit) {
    return run("keys", () -> counters.keys(prefix), found -> {
      List<String> keys = new ArrayList<>(found);
      keys.sort(null);
      ObjectNode body = Json.object().put("prefix", prefix);
      ArrayNode array = body.putArray("keys");
      int n = Math.min(limit, keys.size());
      for (int i = 0; i < n; i++) {
        array.add(keys.get(i));
      }
      body.put("truncated", keys.size() > n);
      return Reply.ok(body);
    });
  }

  /**
   * One operation of a transaction.
   *
   * @param op {@code incr}, {@code decr}, {@code put}, {@code delete} or {@code get}
   * @param delta for incr/decr: a {@code Long}, or a {@code Double} for a floating counter
   * @param dflt for incr/decr: the starting value of a missing counter
   * @param value for put
   * @param ttl for put, or null
   * @param mustExist for incr/decr: fail the transaction if the counter is missing
   */
  public record TxOp(String op, String key, Number delta, Number dflt, Number value, Duration ttl,
      boolean mustExist) {}

  /** Applies every operation atomically, or none; results come back in order. */
  public CompletionStage<Reply> transaction(List<TxOp> ops) {
    if (ops.isEmpty()) {
      return done(Reply.error(Problem.BAD_REQUEST,
          "a transaction needs at least one operation in 'ops'"));
    }
    if (ops.size() > MAX_TRANSACTION_OPS) {
      return done(Reply.error(Problem.BAD_REQUEST, "a transaction holds at most "
          + MAX_TRANSACTION_OPS + " operations, not " + ops.size()));
    }
    for (int i = 0; i < ops.size(); i++) {
      TxOp o = ops.get(i);
      if (o.op().equals("put") && o.value() instanceof Double) {
        return done(Reply.error(Problem.BAD_REQUEST,
            "ops[" + i + "]: a transaction puts integer values only"));
      }
      if (o.mustExist() && (o.delta() instanceof Double || o.dflt() instanceof Double)) {
        return done(Reply.error(Problem.BAD_REQUEST,
            "ops[" + i + "]: mustExist works with integer deltas only"));
      }
      if (o.op().equals("decr") && !(o.delta() instanceof Double)
          && o.delta().longValue() == Long.MIN_VALUE) {
        return done(Reply.error(Problem.BAD_REQUEST,
            "ops[" + i + "]: a decr delta of Long.MIN_VALUE cannot be negated"));
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
      ObjectNode body = Json.object();
      ArrayNode results = body.putArray("results");
      for (int i = 0; i < ops.size(); i++) {
        TxOp o = ops.get(i);
        ObjectNode r = results.addObject().put("key", o.key());
        if (o.op().equals("delete")) {
          r.put("deleted", result.getLong(i) == 1);
        } else if (!result.isPresent(i)) {
          r.putNull("value");
        } else {
          putNumber(r, "value", resultNumber(result, i));
        }
      }
      return Reply.ok(body);
    }, e -> e instanceof KeyNotFoundException k ? mustExist(k) : Reply.error(e));
  }

  private static Number resultNumber(TransactionResult r, int i) {
    try {
      return r.getLong(i);
    } catch (IllegalStateException floating) {
      return r.getDouble(i);
    }
  }

  // ------------------------------------------------------------------ limiters

  /** The limiter operations that answer at once. */
  public enum LimiterAction {
    /** Take permits if every limit allows, else take nothing (429). */
    TRY,
    /** Report the state, taking nothing. */
    PEEK,
    /** Give permits back. */
    REFUND,
    /** Forget the state: full again. */
    RESET,
    /** Store these limits for the name, keeping what was consumed. */
    RECONFIGURE,
    /** Add units to the current period of a quota. */
    TOP_UP
  }

  /**
   * Runs {@code action} on the limiter {@code name} opened with {@code limits}.
   *
   * @param permits the permits to take or refund, or the units of a top-up
   */
  public CompletionStage<Reply> limiter(LimiterAction action, String name, List<LimitSpec> limits,
      long permits) {
    RateLimiter limiter;
    try {
      limiter = open(name, limits);
    } catch (RuntimeException e) {
      return done(Reply.error(e));
    }
    switch (action) {
      case TRY -> {
        if (permits < 0) {
          return done(negativePermits(permits));
        }
        return run("limiter.try", () -> limiters.decide(limiter, permits, opId),
            d -> decision(name, permits, limits, d));
      }
      case PEEK -> {
        return peek("limiter.peek", limiter, limits, limiters.decide(limiter, 0, null), null, 0);
      }
      case REFUND -> {
        if (permits < 0) {
          return done(negativePermits(permits));
        }
        return peek("limiter.refund", limiter, limits, limiters.refund(limiter, permits, opId), "refunded",
            permits);
      }
      case RESET -> {
        return peek("limiter.reset", limiter, limits, limiters.reset(limiter, opId), null, 0);
      }
      case RECONFIGURE -> {
        Limit[] ls = limits.stream().map(LimitSpec::limit).toArray(Limit[]::new);
        return run("limiter.reconfigure", () -> limiters.reconfigure(limiter, opId, ls)
                .thenCompose(next -> limiters.decide(next, 0, null)),
            d -> decision(name, 0, limits, d));
      }
      case TOP_UP -> {
        if (limits.size() != 1 || limits.get(0).kind() != LimitSpec.Kind.QUOTA) {
          return done(Reply.error(Problem.BAD_REQUEST, "top-up needs exactly one quota limit,"
              + " e.g. {\"quota\": \"1000/month\"}"));
        }
        if (permits <= 0) {
          return done(Reply.error(Problem.BAD_REQUEST,
              "top-up units must be positive, not " + permits));
        }
        return peek("limiter.top-up", limiter, limits, limiters.topUp((Quota) limiter, permits, opId),
            "toppedUp", permits);
      }
      default -> throw new AssertionError(action);
    }
  }

  /** After {@code first}, a peek at the limiter: the answer of refund, reset and top-up. */
  private CompletionStage<Reply> peek(String op, RateLimiter limiter, List<LimitSpec> limits,
      CompletionStage<?> first, String field, long value) {
    return run(op, () -> first.thenCompose(ignored -> limiters.decide(limiter, 0, null)), d -> {
      Reply r = decision(limiter.name(), 0, limits, d);
      return field == null ? r : r.withField(field, value);
    });
  }

  private static Reply negativePermits(long permits) {
    return Reply.error(Problem.BAD_REQUEST, "permits must be zero or more, not " + permits
        + "; use refund to give permits back");
  }

  /**
   * Takes {@code permits}, waiting up to {@code maxWait} for them without holding a thread: the
   * limiter says when they should be there, and the next attempt is scheduled for then.
   */
  public CompletableFuture<Reply> acquire(String name, List<LimitSpec> limits, long permits,
      Duration maxWait) {
    CompletableFuture<Reply> result = new CompletableFuture<>();
    try {
      if (permits < 0) {
        result.complete(negativePermits(permits));
        return result;
      }
      Duration wait = maxWait == null ? Duration.ZERO : maxWait;
      if (wait.compareTo(MAX_WAIT) > 0) {
        throw new RequestException("maxWait " + Specs.format(wait) + " is longer than the "
            + Specs.format(MAX_WAIT) + " allowed");
      }
      RateLimiter limiter = open(name, limits);
      attempt(limiter, limits, permits, System.nanoTime() + wait.toNanos(), 1, result);
    } catch (RuntimeException e) {
      result.complete(Reply.error(e));
    }
    return result;
  }

  /**
   * One attempt of an acquire. With an operation id, attempt {@code n} carries the id
   * {@code ID/n}: a replayed acquire walks through the decisions its first run recorded (the
   * denials, then the grant) and applies nothing, where one id for every attempt would replay the
   * first denial for ever.
   */
  @SuppressWarnings("CollectionUndefinedEquality") // the set holds each waiting future by identity, as meant
  private void attempt(RateLimiter limiter, List<LimitSpec> limits, long permits, long deadline,
      int n, CompletableFuture<Reply> result) {
    CompletionStage<Decision> decided;
    try {
      decided = limiters.decide(limiter, permits, attemptId(n));
    } catch (RuntimeException e) {
      result.complete(Reply.error(e));
      return;
    }
    decided.whenComplete((d, failure) -> {
      if (failure != null) {
        result.complete(Reply.error(unwrap(failure)));
        return;
      }
      try {
        long wait = d.retryAfterNanos();
        if (d.allowed() || wait == Decision.NEVER || wait > deadline - System.nanoTime()) {
          result.complete(decision(limiter.name(), permits, limits, d));
          return;
        }
        if (root.waiting.add(result)) {
          result.whenComplete((reply, f) -> root.waiting.remove(result));
        }
        waits().schedule(() -> attempt(limiter, limits, permits, deadline, n + 1, result),
            Math.max(wait, 1_000), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException closing) {
        result.complete(Reply.shuttingDown());
      } catch (RuntimeException e) {
        result.complete(Reply.error(e));
      }
    });
  }

  private String attemptId(int n) {
    if (opId == null) {
      return null;
    }
    String suffix = "/" + n;
    // ids are at most 128 characters: keep the suffix, shorten the key's part if need be
    return (opId.length() + suffix.length() <= 128 ? opId
        : opId.substring(0, 128 - suffix.length())) + suffix;
  }

  private ScheduledExecutorService waits() {
    if (root != this) {
      return root.waits();
    }
    ScheduledExecutorService w = waits;
    if (w == null) {
      synchronized (this) {
        if ((w = waits) == null) {
          waits = w = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tally-acquire-waits");
            t.setDaemon(true);
            return t;
          });
        }
      }
    }
    return w;
  }

  private RateLimiter open(String name, List<LimitSpec> limits) {
    if (limits.isEmpty()) {
      throw new RequestException("no limit given: add one, e.g. {\"limit\": {\"tokenBucket\":"
          + " \"100/1m\"}} or --token-bucket 100/1m");
    }
    Limit[] ls = new Limit[limits.size()];
    for (int i = 0; i < ls.length; i++) {
      ls[i] = limits.get(i).limit();
    }
    if (ls.length == 1 && limits.get(0).kind() == LimitSpec.Kind.QUOTA) {
      // A Quota handle, so that top-up works; same state and key as a plain limiter.
      LimitSpec s = limits.get(0);
      return tally.quota(name, ls[0].limit(), s.period(), s.zone());
    }
    return tally.limiter(name, ls);
  }

  static Reply decision(String name, long permits, List<LimitSpec> limits, Decision d) {
    ObjectNode body = Json.object().put("name", name);
    body.put("allowed", d.allowed());
    body.put("permits", permits);
    body.put("remaining", d.remaining());
    body.put("limit", d.limit());
    boolean never = !d.allowed() && d.retryAfterNanos() == Decision.NEVER;
    if (never) {
      body.putNull("retryAfterMillis");
      body.put("message", permits + " permits exceed the limit of " + d.limit()
          + ": this request can never be granted");
    } else {
      body.put("retryAfterMillis", ceilMillis(d.retryAfterNanos()));
    }
    body.put("resetAfterMillis", ceilMillis(d.resetAfterNanos()));
    // The stored limits decide; a request that sent others must hear it, not be ignored. The
    // decision carries the deciding limit's size, so a different size is what shows.
    LimitSpec asked = limits.get(d.limitIndex() < limits.size() ? d.limitIndex() : 0);
    boolean differ = asked.limit().limit() != d.limit();
    if (differ) {
      body.put("storedLimits", "differ: this limiter's stored limits decided, not the ones sent;"
          + " reconfigure changes them");
    }
    Reply reply = d.allowed() ? Reply.ok(body) : Reply.denied(body);
    RateLimitFields.apply(reply, limits, d, Instant.now());
    if (differ) {
      reply.header("Tally-Limits", "stored-differ");
    }
    return reply;
  }

  private static long ceilMillis(long nanos) {
    return nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
  }

  // ------------------------------------------------------------------ health

  /** A cheap real operation on the store: a read of one key. 503 if the store fails. */
  public CompletionStage<Reply> health() {
    long start = System.nanoTime();
    CompletionStage<OptionalDouble> read;
    try {
      read = probe.getDouble(HEALTH_KEY);
    } catch (RuntimeException e) {
      read = CompletableFuture.failedFuture(e);
    }
    return read.handle((v, failure) -> {
      ObjectNode body = Json.object();
      Problem problem = null;
      Throwable e = failure == null ? null : unwrap(failure);
      if (e == null) {
        timings.done("healthz", v, start);
      } else {
        timings.failed("healthz", e, start);
      }
      if (e == null) {
        body.put("status", "ok");
      } else {
        problem = e instanceof StoreException ? Problem.of(e) : Problem.INTERNAL;
        // a problem: "status" is the HTTP status there (RFC 9457), so the state is "health"
        body.put("health", "unavailable");
        body.put("error", problem.code());
        body.put("message", String.valueOf(e.getMessage()));
      }
      body.put("store", storeName);
      body.put("latencyMicros", (System.nanoTime() - start) / 1000);
      return problem == null ? Reply.ok(body) : Reply.of(problem, body);
    });
  }

  // ------------------------------------------------------------------ bodies

  private static ObjectNode counter(String key, Number value) {
    ObjectNode body = Json.object().put("key", key);
    putNumber(body, "value", value);
    return body;
  }

  private static void putNumber(ObjectNode node, String field, Number value) {
    if (value instanceof Double d) {
      node.put(field, d);
    } else {
      node.put(field, value.longValue());
    }
  }

  private static ObjectNode ttlBody(String key, Duration ttl) {
    ObjectNode body = Json.object().put("key", key);
    if (ttl == null) {
      body.putNull("ttl");
      body.putNull("ttlMillis");
    } else {
      // Whole seconds read better ("40d", not "39d23h59m59.998s"); the millis stay exact.
      long ms = ttl.toMillis();
      body.put("ttl", Specs.format(ms >= 1000 ? Duration.ofSeconds((ms + 999) / 1000) : ttl));
      body.put("ttlMillis", ms);
    }
    return body;
  }

  private static Reply notFound(String key) {
    return Reply.error(Problem.NOT_FOUND, "counter '" + key + "' does not exist (or has expired)");
  }

  /** Stops scheduling waits; acquires still waiting are answered 503. */
  @Override
  public void close() {
    if (root != this) {
      return; // a view: the root owns the waits and the pool
    }
    ScheduledExecutorService w = waits;
    if (w != null) {
      w.shutdownNow(); // the attempts it held will never run: answer their callers here
    }
    for (CompletableFuture<Reply> result : waiting) {
      result.complete(Reply.shuttingDown());
    }
    limiters.close();
  }
}
