package dev.tally.server.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
import dev.tally.TallyMetrics;
import dev.tally.TransactionResult;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Every counter and limiter operation of the HTTP API as a method that returns its {@link Reply}.
 * The HTTP router and the command line both call these, so a command's {@code --json} output,
 * its exit code and the HTTP answer to the same operation cannot drift apart. Arguments arrive
 * parsed; Tally itself checks keys and values, and every exception becomes a reply.
 */
public final class Api implements AutoCloseable {
  /** The longest an HTTP {@code acquire} may wait; waiting holds no thread. */
  public static final Duration MAX_WAIT = Duration.ofMinutes(5);
  /** The most operations one transaction may hold. */
  public static final int MAX_TRANSACTION_OPS = 1000;
  private static final String HEALTH_KEY = "tally.healthz";

  private final Tally tally;
  private final Counters counters;
  /** For /healthz: never answered by a fail-open policy, or an outage would look healthy. */
  private final Counters probe;
  private final TallyMetrics metrics;
  private volatile ScheduledExecutorService waits;
  /** Acquires waiting for their next attempt, answered 503 if the server closes first. */
  private final Set<CompletableFuture<Reply>> waiting = ConcurrentHashMap.newKeySet();

  /**
   * @param tally the store
   * @param metrics where operations are timed, or null for none
   */
  public Api(Tally tally, TallyMetrics metrics) {
    this.tally = Objects.requireNonNull(tally, "tally");
    this.counters = tally.counters();
    this.probe = counters.withFailurePolicy(FailurePolicy.THROW);
    this.metrics = metrics;
  }

  private <T> T call(String operation, Supplier<T> op) {
    return metrics == null ? op.get() : metrics.record(operation, op);
  }

  // ------------------------------------------------------------------ counters

  /**
   * Adds {@code delta} (a {@code Long}, or a {@code Double} for a floating counter); a missing
   * counter starts at {@code dflt}, or, with {@code mustExist}, is not created (404).
   */
  public Reply incr(String key, Number delta, Number dflt, boolean mustExist) {
    return add("incr", key, delta, dflt, mustExist, false);
  }

  /** Subtracts {@code delta}; the default is not negated. */
  public Reply decr(String key, Number delta, Number dflt, boolean mustExist) {
    return add("decr", key, delta, dflt, mustExist, true);
  }

  private Reply add(String op, String key, Number delta, Number dflt, boolean mustExist,
      boolean negate) {
    try {
      Number value;
      if (delta instanceof Double || dflt instanceof Double) {
        if (mustExist) {
          throw new RequestException("mustExist works with integer deltas only");
        }
        double d = negate ? -delta.doubleValue() : delta.doubleValue();
        value = call(op, () -> counters.incr(key, d, dflt.doubleValue()));
      } else {
        long d = delta.longValue();
        long df = dflt.longValue();
        value = call(op, () -> mustExist
            ? (negate ? counters.decrExisting(key, d) : counters.incrExisting(key, d))
            : (negate ? counters.decr(key, d, df) : counters.incr(key, d, df)));
      }
      return Reply.ok(counter(key, value));
    } catch (KeyNotFoundException e) {
      return mustExist(e);
    } catch (NotAnIntegerException e) {
      // The core's message names the Java methods; here the fix is in what the caller types.
      return Reply.error(Problem.CONFLICT, "counter '" + key + "' holds a floating value; give the delta as"
          + " a decimal (" + delta + ".0, not " + delta + ") to change it");
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  private static Reply mustExist(KeyNotFoundException e) {
    return Reply.error(Problem.NOT_FOUND, "counter '" + e.key() + "' does not exist (or has"
        + " expired), and mustExist forbids creating it");
  }

  /** The value of a counter, integer or floating; 404 if it is missing or expired. */
  public Reply get(String key) {
    try {
      Number value = call("get", () -> {
        try {
          OptionalLong v = counters.get(key);
          return v.isPresent() ? (Number) v.getAsLong() : null;
        } catch (NotAnIntegerException floating) {
          OptionalDouble v = counters.getDouble(key);
          return v.isPresent() ? (Number) v.getAsDouble() : null;
        }
      });
      return value == null ? notFound(key) : Reply.ok(counter(key, value));
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** Sets a counter, expiring after {@code ttl} (null: never). */
  public Reply put(String key, Number value, Duration ttl) {
    try {
      call("put", () -> {
        if (value instanceof Double d) {
          counters.put(key, d, ttl);
        } else {
          counters.put(key, value.longValue(), ttl);
        }
        return null;
      });
      return Reply.ok(counter(key, value));
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** Sets a counter only if it is missing or expired: {@code {"added": true|false}}. */
  public Reply add(String key, Number value, Duration ttl) {
    try {
      boolean added = call("add", () -> value instanceof Double d
          ? counters.add(key, d, ttl) : counters.add(key, value.longValue(), ttl));
      ObjectNode body = Json.object().put("key", key);
      body.put("added", added);
      return Reply.ok(body);
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** Reads and deletes a counter in one step; 404 if it is missing. */
  public Reply pop(String key) {
    try {
      Number value = call("pop", () -> {
        try {
          OptionalLong v = counters.pop(key);
          return v.isPresent() ? (Number) v.getAsLong() : null;
        } catch (NotAnIntegerException floating) {
          OptionalDouble v = counters.popDouble(key);
          return v.isPresent() ? (Number) v.getAsDouble() : null;
        }
      });
      return value == null ? notFound(key) : Reply.ok(counter(key, value));
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** Deletes a counter; 404 if there was none. */
  public Reply delete(String key) {
    try {
      boolean deleted = call("delete", () -> counters.delete(key));
      if (!deleted) {
        return notFound(key);
      }
      ObjectNode body = Json.object().put("key", key);
      body.put("deleted", true);
      return Reply.ok(body);
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** Sets the expiry of an existing counter (null: make it permanent); 404 if missing. */
  public Reply touch(String key, Duration ttl) {
    try {
      boolean touched = call("touch", () -> counters.touch(key, ttl));
      if (!touched) {
        return notFound(key);
      }
      // As kept: a longer ttl than the store keeps is kept as its longest.
      return Reply.ok(ttlBody(key, ttl == null || ttl.compareTo(Counters.MAX_TTL) < 0 ? ttl : Counters.MAX_TTL));
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** The time left before a counter expires ({@code "ttl": null}: never); 404 if missing. */
  public Reply ttl(String key) {
    try {
      Optional<Duration> ttl = call("ttl", () -> counters.ttl(key));
      if (ttl.isEmpty() && call("get", () -> counters.getDouble(key)).isEmpty()) {
        return notFound(key);
      }
      return Reply.ok(ttlBody(key, ttl.orElse(null)));
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /** The live keys starting with {@code prefix}, sorted, at most {@code limit} of them. */
  public Reply keys(String prefix, int limit) {
    try {
      List<String> keys = new ArrayList<>(call("keys", () -> counters.keys(prefix)));
      keys.sort(null);
      ObjectNode body = Json.object().put("prefix", prefix);
      ArrayNode array = body.putArray("keys");
      int n = Math.min(limit, keys.size());
      for (int i = 0; i < n; i++) {
        array.add(keys.get(i));
      }
      body.put("truncated", keys.size() > n);
      return Reply.ok(body);
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
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
  public Reply transaction(List<TxOp> ops) {
    try {
      if (ops.isEmpty()) {
        throw new RequestException("a transaction needs at least one operation in 'ops'");
      }
      if (ops.size() > MAX_TRANSACTION_OPS) {
        throw new RequestException("a transaction holds at most " + MAX_TRANSACTION_OPS
            + " operations, not " + ops.size());
      }
      for (int i = 0; i < ops.size(); i++) {
        TxOp o = ops.get(i);
        if (o.op().equals("put") && o.value() instanceof Double) {
          throw new RequestException("ops[" + i + "]: a transaction puts integer values only");
        }
        if (o.mustExist() && (o.delta() instanceof Double || o.dflt() instanceof Double)) {
          throw new RequestException("ops[" + i + "]: mustExist works with integer deltas only");
        }
      }
      TransactionResult result = call("transaction", () -> counters.transaction(tx -> {
        for (TxOp o : ops) {
          boolean floating = o.delta() instanceof Double || o.dflt() instanceof Double;
          switch (o.op()) {
            case "incr", "decr" -> {
              boolean neg = o.op().equals("decr");
              if (floating) {
                double d = o.delta().doubleValue();
                tx.incr(o.key(), neg ? -d : d, o.dflt().doubleValue());
              } else if (o.mustExist()) {
                tx.incrExisting(o.key(), neg ? Math.negateExact(o.delta().longValue()) : o.delta().longValue());
              } else {
                tx.incr(o.key(), neg ? Math.negateExact(o.delta().longValue()) : o.delta().longValue(),
                    o.dflt().longValue());
              }
            }
            case "put" -> tx.put(o.key(), o.value().longValue(), o.ttl());
            case "delete" -> tx.delete(o.key());
            case "get" -> tx.get(o.key());
            default -> throw new RequestException("unknown op '" + o.op() + "'");
          }
        }
      }));
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
    } catch (KeyNotFoundException e) {
      return mustExist(e);
    } catch (ArithmeticException e) {
      return Reply.error(Problem.BAD_REQUEST, "a decr delta of Long.MIN_VALUE cannot be negated");
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
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
  public Reply limiter(LimiterAction action, String name, List<LimitSpec> limits, long permits) {
    try {
      RateLimiter limiter = open(name, limits);
      String op = "limiter." + action.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
      switch (action) {
        case TRY -> {
          long p = permits(permits);
          return decision(name, p, limits, call(op, () -> limiter.decide(p)));
        }
        case PEEK -> {
          return decision(name, 0, limits, call(op, () -> limiter.decide(0)));
        }
        case REFUND -> {
          long p = permits(permits);
          call(op, () -> {
            limiter.refund(p);
            return null;
          });
          return decision(name, 0, limits, call("limiter.peek", () -> limiter.decide(0)))
              .withField("refunded", p);
        }
        case RESET -> {
          call(op, () -> {
            limiter.reset();
            return null;
          });
          return decision(name, 0, limits, call("limiter.peek", () -> limiter.decide(0)));
        }
        case RECONFIGURE -> {
          RateLimiter next = call(op, () -> limiter.reconfigure(
              limits.stream().map(LimitSpec::limit).toArray(Limit[]::new)));
          return decision(name, 0, limits, call("limiter.peek", () -> next.decide(0)));
        }
        case TOP_UP -> {
          if (limits.size() != 1 || limits.get(0).kind() != LimitSpec.Kind.QUOTA) {
            throw new RequestException("top-up needs exactly one quota limit, e.g."
                + " {\"quota\": \"1000/month\"}");
          }
          long units = permits;
          if (units <= 0) {
            throw new RequestException("top-up units must be positive, not " + units);
          }
          call(op, () -> {
            ((Quota) limiter).topUp(units);
            return null;
          });
          return decision(name, 0, limits, call("limiter.peek", () -> limiter.decide(0)))
              .withField("toppedUp", units);
        }
        default -> throw new AssertionError(action);
      }
    } catch (RuntimeException e) {
      return Reply.error(e);
    }
  }

  /**
   * Takes {@code permits}, waiting up to {@code maxWait} for them without holding a thread: the
   * limiter says when they should be there, and the next attempt is scheduled for then.
   */
  public CompletableFuture<Reply> acquire(String name, List<LimitSpec> limits, long permits,
      Duration maxWait) {
    CompletableFuture<Reply> result = new CompletableFuture<>();
    try {
      long p = permits(permits);
      Duration wait = maxWait == null ? Duration.ZERO : maxWait;
      if (wait.compareTo(MAX_WAIT) > 0) {
        throw new RequestException("maxWait " + Specs.format(wait) + " is longer than the "
            + Specs.format(MAX_WAIT) + " allowed");
      }
      RateLimiter limiter = open(name, limits);
      attempt(limiter, limits, p, System.nanoTime() + wait.toNanos(), result);
    } catch (RuntimeException e) {
      result.complete(Reply.error(e));
    }
    return result;
  }

  @SuppressWarnings("CollectionUndefinedEquality") // a future is equal only to itself: what waiting means
  private void attempt(RateLimiter limiter, List<LimitSpec> limits, long permits, long deadline,
      CompletableFuture<Reply> result) {
    try {
      Decision d = call("limiter.acquire", () -> limiter.decide(permits));
      long wait = d.retryAfterNanos();
      if (d.allowed() || wait == Decision.NEVER || wait > deadline - System.nanoTime()) {
        result.complete(decision(limiter.name(), permits, limits, d));
        return;
      }
      if (waiting.add(result)) {
        result.whenComplete((reply, failure) -> waiting.remove(result));
      }
      waits().schedule(() -> attempt(limiter, limits, permits, deadline, result),
          Math.max(wait, 1_000), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException closing) {
      result.complete(Reply.error(Problem.SHUTTING_DOWN, "the server is shutting down"));
    } catch (RuntimeException e) {
      result.complete(Reply.error(e));
    }
  }

  private ScheduledExecutorService waits() {
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
      Limit q = ls[0];
      // A Quota handle, so that top-up works; same state and key as a plain limiter.
      LimitSpec s = limits.get(0);
      return tally.quota(name, q.limit(), s.period(), s.zone());
    }
    return tally.limiter(name, ls);
  }

  private static long permits(long permits) {
    if (permits < 0) {
      throw new RequestException("permits must be zero or more, not " + permits
          + "; use refund to give permits back");
    }
    return permits;
  }

  private static Reply decision(String name, long permits, List<LimitSpec> limits, Decision d) {
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
    Reply reply = d.allowed() ? Reply.ok(body) : Reply.of(Problem.DENIED, body);
    RateLimitFields.apply(reply, limits, d, Instant.now());
    return reply;
  }

  private static long ceilMillis(long nanos) {
    return nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
  }

  // ------------------------------------------------------------------ health

  /** A cheap real operation on the store: a read of one key. 503 if the store fails. */
  public Reply health() {
    long start = System.nanoTime();
    ObjectNode body = Json.object();
    Problem problem = null;
    try {
      call("healthz", () -> probe.getDouble(HEALTH_KEY));
      body.put("status", "ok");
    } catch (StoreException e) {
      problem = Problem.of(e);
      body.put("status", "unavailable");
      body.put("error", problem.code());
      body.put("message", e.getMessage());
    }
    body.put("store", metrics == null ? tally.uri().split(":", 2)[0] : metrics.store());
    body.put("latencyMicros", (System.nanoTime() - start) / 1000);
    return problem == null ? Reply.ok(body) : Reply.of(problem, body);
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
    ScheduledExecutorService w = waits;
    if (w != null) {
      w.shutdownNow(); // the attempts it held will never run: answer their callers here
    }
    for (CompletableFuture<Reply> result : waiting) {
      result.complete(Reply.error(Problem.SHUTTING_DOWN, "the server is shutting down"));
    }
  }
}
