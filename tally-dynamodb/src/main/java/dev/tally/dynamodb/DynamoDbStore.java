package dev.tally.dynamodb;

import dev.tally.Decision;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.TxOp;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.UnaryOperator;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * The {@code dynamodb:} store: counters and rate limiters as items of one table. See
 * {@link CounterExchanges} for how counters stay exact in one request each,
 * {@link LimiterExchange} for how limiters never over-grant, and {@link ShardedExchanges} for
 * hot keys. {@code docs/dynamodb.md} lists the request and capacity each operation costs.
 *
 * <p>Clock: DynamoDB has none to offer, so expiry and limiters run on the
 * {@link StoreContext#timeSource()} (the system clock unless the user gave one), with limiter
 * time never moving backwards.
 */
final class DynamoDbStore implements Store {
  final Options options;
  final Clients clients;
  final Table table;
  final Runner counters;
  final Runner limiters;
  private final LimiterCache cache = new LimiterCache();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AsyncDynamoDbStore async; // null without an async HTTP client
  private final ReentrantLock[] txStripes = newStripes(64);
  private final long retentionNanos;

  DynamoDbStore(Options options, StoreContext context, Clients clients, UnaryOperator<DynamoDbClient> wrap) {
    this.options = options;
    this.clients = clients;
    Items items = new Items(options.keyAttribute());
    this.table = new Table(options.table(), items, context.timeSource(), options.conflictTries());
    AtomicBoolean returnsFailedItems = new AtomicBoolean();
    this.counters = new Runner(wrap.apply(clients.counters), clients.asyncAvailable() ? clients::async : null,
        options, returnsFailedItems, options.retries());
    this.limiters = new Runner(clients.limiters, null, options, returnsFailedItems, options.limiterRetries());
    this.retentionNanos = context.operationRetentionNanos();
    this.async = clients.asyncAvailable() ? new AsyncDynamoDbStore(this, context) : null;
  }

  private static ReentrantLock[] newStripes(int n) {
    ReentrantLock[] locks = new ReentrantLock[n];
    for (int i = 0; i < n; i++) {
      locks[i] = new ReentrantLock();
    }
    return locks;
  }

  /** Opens a store on an existing table. */
  static DynamoDbStore open(Options options, StoreContext context, List<ExecutionInterceptor> interceptors) {
    return open(options, context, interceptors, UnaryOperator.identity());
  }

  /** Opens a store whose blocking counter requests go through {@code wrap} (for tests). */
  static DynamoDbStore open(Options options, StoreContext context, List<ExecutionInterceptor> interceptors,
      UnaryOperator<DynamoDbClient> wrap) {
    Clients clients = new Clients(options, interceptors);
    try {
      Tables.awaitUsable(clients.counters, options);
      return new DynamoDbStore(options, context, clients, wrap);
    } catch (RuntimeException e) {
      clients.close();
      throw e;
    }
  }

  /** Carries out {@code x}, the whole call, within the store's timeout. */
  <T> T run(Exchange<T> x) {
    return run(x, Deadline.start(options));
  }

  <T> T run(Exchange<T> x, Deadline deadline) {
    checkOpen();
    return counters.run(x, deadline);
  }

  final void checkOpen() {
    if (closed.get()) {
      throw new StoreUnavailableException("the store " + options.describe() + " is closed", null);
    }
  }

  // ------------------------------------------------------------------ the exchanges

  Exchange<Long> incrExchange(String key, long delta, long dflt, boolean create) {
    if (options.sharded(key)) {
      checkShardKey(key);
      if (!create) {
        throw ShardedExchanges.unsupported(key, "incrExisting");
      }
      if (dflt != 0) {
        throw ShardedExchanges.unsupported(key, "a default other than 0");
      }
      return new ShardedExchanges.Incr(table, key, delta, options.shards());
    }
    return new CounterExchanges.Incr(table, key, delta, dflt, create);
  }

  Exchange<Double> incrDoubleExchange(String key, double delta, double dflt) {
    refuseSharded(key, "floating increments");
    return new CounterExchanges.IncrDouble(table, key, delta, dflt);
  }

  Exchange<Void> putExchange(String key, Number value, long ttlNanos) {
    refuseSharded(key, "put");
    return new CounterExchanges.Put(table, key, value, ttlNanos);
  }

  Exchange<Boolean> addExchange(String key, Number value, long ttlNanos) {
    refuseSharded(key, "add");
    return new CounterExchanges.Add(table, key, value, ttlNanos);
  }

  Exchange<Boolean> touchExchange(String key, long ttlNanos) {
    refuseSharded(key, "expiry (touch)");
    return new CounterExchanges.Touch(table, key, ttlNanos);
  }

  Exchange<List<String>> keysExchange(String prefix) {
    UnaryOperator<String> logical = options.shards() == 1 ? UnaryOperator.identity() : stored -> {
      String base = ShardedExchanges.logicalKey(stored);
      return base.length() < stored.length() && options.sharded(base) ? base : stored;
    };
    return new CounterExchanges.Keys(table, prefix, logical);
  }

  Exchange<Number[]> transactExchange(List<TxOp> ops, Once once) {
    for (TxOp op : ops) {
      refuseSharded(op.key(), "transactions");
    }
    return new TransactExchange(table, ops, once);
  }

  private void refuseSharded(String key, String what) {
    if (options.sharded(key)) {
      throw ShardedExchanges.unsupported(key, what);
    }
  }

  private static void checkShardKey(String key) {
    if (key.indexOf(ShardedExchanges.SEPARATOR) >= 0) {
      throw new IllegalArgumentException("the key of a sharded counter cannot contain the NUL"
          + " character, which separates it from the shard number");
    }
  }

  // ------------------------------------------------------------------ Store

  @Override
  public long incr(String key, long delta, long dflt, boolean create) {
    return run(incrExchange(key, delta, dflt, create));
  }

  @Override
  public double incrDouble(String key, double delta, double dflt) {
    return run(incrDoubleExchange(key, delta, dflt));
  }

  @Override
  public Number get(String key) {
    if (options.sharded(key)) {
      return run(new ShardedExchanges.Sum(table, key, options.shards()));
    }
    CounterExchanges.Get g = new CounterExchanges.Get(table, key);
    run(g);
    return g.value();
  }

  @Override
  public void put(String key, Number value, long ttlNanos) {
    run(putExchange(key, value, ttlNanos));
  }

  @Override
  public boolean add(String key, Number value, long ttlNanos) {
    return run(addExchange(key, value, ttlNanos));
  }

  @Override
  public Number pop(String key, boolean integerOnly) {
    if (options.sharded(key)) {
      return run(new ShardedExchanges.PopAll(table, key, options.shards()));
    }
    return run(new CounterExchanges.Delete(table, key, integerOnly));
  }

  @Override
  public boolean delete(String key) {
    if (options.sharded(key)) {
      return run(new ShardedExchanges.PopAll(table, key, options.shards())) != null;
    }
    CounterExchanges.Delete d = new CounterExchanges.Delete(table, key, false);
    run(d);
    return d.wasLive();
  }

  @Override
  public boolean touch(String key, long ttlNanos) {
    return run(touchExchange(key, ttlNanos));
  }

  @Override
  public long ttl(String key) {
    if (options.sharded(key)) {
      return get(key) == null ? TTL_MISSING : TTL_PERMANENT;
    }
    CounterExchanges.Get g = new CounterExchanges.Get(table, key);
    run(g);
    return g.ttl();
  }

  @Override
  public List<String> keys(String prefix) {
    return run(keysExchange(prefix));
  }

  /**
   * Transactions of this process on overlapping keys take turns (striped locks, taken in
   * order), so they do not cancel each other; across processes DynamoDB's conditions decide.
   */
  @Override
  public Number[] transact(List<TxOp> ops) {
    return transact(ops, Deadline.start(options));
  }

  Number[] transact(List<TxOp> ops, Deadline deadline) {
    if (ops.size() == 1 && ops.get(0) instanceof TxOp.Incr i && i.bounds() != null) {
      checkOpen();
      refuseSharded(i.key(), "bounded increments");
      return transact(ops, new BoundedIncr(table, i), deadline);
    }
    return transact(ops, transactExchange(ops, null), deadline);
  }

  private Number[] transact(List<TxOp> ops, Exchange<Number[]> x, Deadline deadline) {
    TreeSet<Integer> stripes = new TreeSet<>();
    for (TxOp op : ops) {
      stripes.add(Math.floorMod(op.key().hashCode(), txStripes.length));
    }
    int locked = 0;
    try {
      for (int s : stripes) {
        deadline.lock(txStripes[s], "the keys of a transaction on", ops.get(0).key());
        locked++;
      }
      return run(x, deadline);
    } finally {
      for (int s : stripes) {
        if (locked-- == 0) {
          break;
        }
        txStripes[s].unlock();
      }
    }
  }

  @Override
  public Decision limit(LimiterCall call, LimiterOperation operation, long permits) {
    return limit(call, operation, permits, null, Deadline.start(options));
  }

  Decision limit(LimiterCall call, LimiterOperation operation, long permits, Once once, Deadline deadline) {
    checkOpen();
    LimiterCache.Entry entry = cache.entry(call.key());
    // Threads of this process take turns on a limiter: the wait for the turn is part of the call.
    deadline.lock(entry.lock, "limiter", call.key());
    try {
      return limiters.run(new LimiterExchange(table, call, operation, permits, entry, once), deadline);
    } finally {
      entry.lock.unlock();
    }
  }

  /**
   * One step of a concurrency limit: {@link ConcurrencyExchange}, a conditional write on the
   * limit's item, after this process's other threads on the key (their turn, as for limiters).
   */
  @Override
  public ConcurrencyResult concurrency(ConcurrencyCall call) {
    checkOpen();
    Deadline deadline = Deadline.start(options);
    LimiterCache.Entry entry = cache.entry(call.key());
    deadline.lock(entry.lock, "concurrency limit", call.key());
    try {
      return limiters.run(new ConcurrencyExchange(table, call), deadline);
    } finally {
      entry.lock.unlock();
    }
  }

  /**
   * A joint decision: one transaction over every limiter's item ({@link JointLimiterExchange}).
   * This process's threads take turns on each key, as for one limiter, taking the keys' turns in
   * key order so that two joint decisions on overlapping keys cannot wait on each other.
   */
  @Override
  public Decision[] limitAll(List<LimiterCall> calls, long permitsEach) {
    return limitAll(calls, permitsEach, Deadline.start(options));
  }

  Decision[] limitAll(List<LimiterCall> calls, long permitsEach, Deadline deadline) {
    checkOpen();
    LimiterCache.Entry[] entries = new LimiterCache.Entry[calls.size()];
    Integer[] order = new Integer[calls.size()];
    for (int i = 0; i < entries.length; i++) {
      entries[i] = cache.entry(calls.get(i).key());
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparing(i -> calls.get(i).key()));
    int locked = 0;
    try {
      for (int i : order) {
        deadline.lock(entries[i].lock, "limiter", calls.get(i).key());
        locked++;
      }
      return run(new JointLimiterExchange(table, calls, permitsEach, entries), deadline);
    } finally {
      for (int i : order) {
        if (locked-- == 0) {
          break;
        }
        entries[i].lock.unlock();
      }
    }
  }

  // ------------------------------------------------------------------ operation ids

  /** The id's record for {@code m}, on the store's clock. */
  Once once(OperationId id, Mutation m) {
    return new Once(id, m, m.key(), table.now(), retentionNanos);
  }

  /**
   * The exchange that applies {@code m} with its id's record, checked for what the key allows
   * before any request (a sharded counter refuses what it refuses without an id).
   */
  Exchange<?> onceExchange(Once once) {
    Mutation m = once.mutation;
    if (m instanceof Mutation.Incr i) {
      if (options.sharded(i.key())) {
        checkShardKey(i.key());
        incrExchange(i.key(), i.delta(), i.dflt(), i.create()); // the refusals
        return new ShardedExchanges.Incr(table, i.key(), i.delta(), options.shards(), once);
      }
      return new CounterExchanges.Incr(table, i.key(), i.delta(), i.dflt(), i.create(), once);
    }
    if (m instanceof Mutation.Transact tx) {
      return transactExchange(tx.ops(), once);
    }
    if (m instanceof Mutation.LimiterStep) {
      throw new IllegalArgumentException("limiter steps take the limiter's turn: see applyOnce");
    }
    if (options.sharded(m.key())) {
      if (m instanceof Mutation.Pop || m instanceof Mutation.Delete) {
        throw ShardedExchanges.unsupported(m.key(), "operation ids on pop and delete");
      }
      refuseSharded(m.key(), m instanceof Mutation.IncrDouble ? "floating increments"
          : m instanceof Mutation.Touch ? "expiry (touch)" : m instanceof Mutation.Put ? "put" : "add");
    }
    return new OnceExchanges.Cas(table, once);
  }

  /**
   * Applies {@code mutation} once per {@code id}: the id is claimed in the table's id space
   * ({@link OnceExchanges.Claim}, so another operation cannot reuse it), then the mutation is
   * written together with the id's record in one conditional write ({@link Once}). See
   * docs/dynamodb.md, "Operation ids".
   */
  @Override
  public Object applyOnce(OperationId id, Mutation mutation) {
    return applyOnce(id, mutation, Deadline.start(options));
  }

  /** The same within {@code deadline}, which the claim and the write share. */
  Object applyOnce(OperationId id, Mutation mutation, Deadline deadline) {
    checkOpen();
    Once once = once(id, mutation);
    try {
      if (mutation instanceof Mutation.LimiterStep step) {
        limiters.run(new OnceExchanges.Claim(table, once), deadline);
        return releasingOnRefusal(once, deadline,
            () -> limit(step.call(), step.operation(), step.permits(), once, deadline));
      }
      Exchange<?> x = onceExchange(once);
      run(new OnceExchanges.Claim(table, once), deadline);
      if (mutation instanceof Mutation.Transact tx) {
        @SuppressWarnings("unchecked")
        Exchange<Number[]> t = (Exchange<Number[]>) x;
        return releasingOnRefusal(once, deadline, () -> transact(tx.ops(), t, deadline));
      }
      return releasingOnRefusal(once, deadline, () -> run(x, deadline));
    } catch (StoreTimeoutException e) {
      throw retrySafe(e, id);
    }
  }

  /** Runs the claimed operation; a refusal gives the claim back ({@link OnceExchanges.Release}). */
  private Object releasingOnRefusal(Once once, Deadline deadline, java.util.function.Supplier<Object> operation) {
    try {
      return operation.get();
    } catch (RuntimeException e) {
      if (OnceExchanges.Release.appliedNothing(e)) {
        releaseQuietly(once, deadline, e);
      }
      throw e;
    }
  }

  /** Gives {@code once}'s claim back; a failure to is added to {@code refusal}, which is what the caller sees. */
  void releaseQuietly(Once once, Deadline deadline, RuntimeException refusal) {
    try {
      run(new OnceExchanges.Release(table, once), deadline);
    } catch (RuntimeException e) {
      refusal.addSuppressed(e); // the claim then lapses with the id's retention
    }
  }

  /** A timeout of a call with an operation id says what the id makes safe. */
  static StoreTimeoutException retrySafe(StoreTimeoutException e, OperationId id) {
    StoreTimeoutException safe = new StoreTimeoutException(e.getMessage() + ". The call carried operation id '"
        + id.value() + "': retrying it with the same id applies it at most once", e.getCause());
    safe.setStackTrace(e.getStackTrace());
    return safe;
  }

  /** The non-blocking form, when an async HTTP client is on the class path. */
  @Override
  public AsyncStore async() {
    return async;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      cache.clear();
      clients.close();
    }
  }

  @Override
  public String toString() {
    return "DynamoDbStore[" + options.describe() + "]";
  }
}
