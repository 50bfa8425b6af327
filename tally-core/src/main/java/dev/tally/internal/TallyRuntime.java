package dev.tally.internal;

import dev.tally.CircuitBreaker;
import dev.tally.ConcurrencyLimit;
import dev.tally.Counters;
import dev.tally.FailurePolicy;
import dev.tally.JointDecision;
import dev.tally.LeakyBucket;
import dev.tally.Limit;
import dev.tally.Quota;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TimeSource;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.JointLimit;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The one {@link Tally}: opens the store its URI names (built in, or found with
 * {@link ServiceLoader} as a {@link StoreProvider}), and builds counters and limiters on it.
 */
public final class TallyRuntime extends Tally {
  /** Where the stores that are not built in live, to say which module to add. */
  private static final Map<String, String> STORE_MODULES = Map.of(
      "file", "tally-local", "redis", "tally-redis", "rediss", "tally-redis",
      "redis-cluster", "tally-redis", "redis-sentinel", "tally-redis", "dynamodb", "tally-dynamodb",
      "postgresql", "tally-jdbc");

  private final String uri;
  /** The store as opened, for {@link #store()} and {@link #close()}. */
  private final Store openedStore;
  /** The store every counter and limiter calls: the opened one, behind the circuit if any. */
  private final Store store;
  private final AsyncStore asyncStore;
  private final Circuit circuit; // null without a circuit breaker
  private final Failures failures;
  private final Mismatches mismatches;
  private final FailurePolicy defaultPolicy;
  private final TimeSource timeSource;
  private final Duration operationRetention;
  private final LazyExecutor executor;
  private final Counters rootCounters;
  private final ConcurrencyWaiters concurrencyWaiters = new ConcurrencyWaiters();

  private TallyRuntime(Tally.Builder b, Store opened, LazyExecutor executor) {
    this.uri = b.uri();
    this.openedStore = opened;
    this.executor = executor;
    AsyncStore nativeAsync = opened.async();
    AsyncStore async = nativeAsync != null ? nativeAsync : new SyncStoreAdapter(opened, executor);
    if (b.circuitBreaker().enabled()) {
      // Beneath everything else, so that each operation of every API passes it once. The
      // asynchronous side wraps the adapter, not the other way round, so a refused call of a
      // blocking store fails on the caller's thread, without a hop to the executor. The probe
      // reads the opened store on the executor, so no caller waits for it.
      this.circuit = new Circuit(Tally.scheme(uri), b.circuitBreaker(), b.timeSource(), b.listener(), opened,
          executor);
      this.store = new CircuitBreakerStore(opened, circuit);
      this.asyncStore = new CircuitBreakerStore.Async(async, circuit);
    } else {
      this.circuit = null;
      this.store = opened;
      this.asyncStore = async;
    }
    this.failures = new Failures(b.listener());
    this.mismatches = new Mismatches(b.listener());
    this.defaultPolicy = b.failurePolicy();
    this.timeSource = b.timeSource();
    this.operationRetention = b.operationRetention();
    this.rootCounters = new DefaultCounters(new Group("", "", defaultPolicy, store, asyncStore, failures));
  }

  /** Opens the store the settings name, for {@link Tally.Builder#build()}. */
  static Tally open(Tally.Builder settings) {
    String uri = settings.uri();
    String scheme = Tally.scheme(uri);
    LazyExecutor executor = new LazyExecutor();
    StoreContext context = new StoreContext(settings.timeSource(), settings.timeSourceSupplied(), executor,
        settings.listener(), settings.operationRetention());
    StoreProvider provider = provider(scheme);
    Store store;
    try {
      store = provider.open(uri, context);
    } catch (StoreException e) {
      if (!settings.deferOpen()) {
        throw e;
      }
      // Started without its store: the calls open it when it answers (DeferredStore).
      System.getLogger("dev.tally").log(System.Logger.Level.WARNING, "store {0}: not reachable at startup ({1});"
          + " calls fail by their failure policy until it answers", scheme, e.getMessage());
      store = new DeferredStore(uri, provider, context, executor);
    }
    return new TallyRuntime(settings, store, executor);
  }

  /** The {@link Tally.Implementation} that {@link ServiceLoader} finds. */
  public static final class Provider implements Tally.Implementation {
    @Override
    public Tally open(Tally.Builder settings) {
      return TallyRuntime.open(settings);
    }
  }

  /** The URI this was opened with. */
  @Override
  public String uri() {
    return uri;
  }

  /** The counters of this store, with keys used as given and the default failure policy. */
  @Override
  public Counters counters() {
    return rootCounters;
  }

  /**
   * A named group of counters: keys are prefixed with {@code group + ":"}, so
   * {@code counters("views").incr("episode:512")} counts {@code views:episode:512}.
   */
  @Override
  public Counters counters(String group) {
    return counters(group, defaultPolicy);
  }

  /** A named group of counters with its own failure policy. */
  @Override
  public Counters counters(String group, FailurePolicy policy) {
    Objects.requireNonNull(policy, "policy");
    return new DefaultCounters(
        new Group(group, Checks.groupPrefix(group), policy, store, asyncStore, failures));
  }

  /**
   * A rate limiter named {@code name} (the key of its state) applying every one of
   * {@code limits}: a request is granted only if all allow, and then consumes from all.
   *
   * <pre>{@code
   * RateLimiter api = tally.limiter("api:user:42", Limit.tokenBucket(100, Duration.ofMinutes(1)));
   * if (api.tryAcquire()) { ... }
   * }</pre>
   */
  @Override
  public RateLimiter limiter(String name, Limit... limits) {
    return newLimiter(name, limits);
  }

  @Override
  public ConcurrencyLimit concurrency(String name, long maxPermits) {
    String key = Checks.key("", name);
    return new DefaultConcurrencyLimit(name, key, maxPermits, store, concurrencyWaiters);
  }

  /**
   * Finds or creates the leaky bucket {@code name}: {@code capacity} deep, draining fully in
   * {@code rate}. If the store holds the bucket already, its stored capacity, rate and level
   * apply.
   */
  @Override
  public LeakyBucket leakyBucket(String name, long capacity, Duration rate) {
    return new DefaultLeakyBucket(newLimiter(name, Limit.leakyBucket(capacity, rate)), timeSource);
  }

  /** A calendar quota: {@code allowance} units per {@code period} in {@code zone}. */
  @Override
  public Quota quota(String name, long allowance, Limit.Period period, ZoneId zone) {
    return newLimiter(name, Limit.quota(allowance, period, zone));
  }

  private DefaultRateLimiter newLimiter(String name, Limit... limits) {
    String key = Checks.key("", name);
    Objects.requireNonNull(limits, "limits");
    for (Limit l : limits) {
      Objects.requireNonNull(l, "limit");
    }
    return new DefaultRateLimiter(new LimiterMachine(key, List.of(limits), 0, mismatches), store, asyncStore, defaultPolicy,
        failures, timeSource, operationRetention);
  }

  @Override
  public JointDecision decide(List<RateLimiter> limiters, long permitsEach) {
    return DefaultRateLimiter.decideAll(own(limiters, permitsEach), store, permitsEach);
  }

  @Override
  public CompletionStage<JointDecision> decideAsync(List<RateLimiter> limiters, long permitsEach) {
    return DefaultRateLimiter.decideAllAsync(own(limiters, permitsEach), asyncStore, permitsEach);
  }

  /** {@code limiters}, checked to be this store's and fit for one joint decision. */
  private List<DefaultRateLimiter> own(List<RateLimiter> limiters, long permitsEach) {
    if (limiters == null) {
      throw new IllegalArgumentException("limiters must not be null");
    }
    List<DefaultRateLimiter> own = new ArrayList<>(limiters.size());
    for (RateLimiter l : limiters) {
      if (l instanceof DefaultRateLimiter d && d.store() == store) {
        own.add(d);
      } else if (l instanceof DefaultRateLimiter d && d.store() instanceof OnceStore) {
        throw new IllegalArgumentException("limiter '" + l.name() + "' carries an operation id;"
            + " a joint decision takes plain limiters");
      } else if (l == null) {
        throw new IllegalArgumentException("a joint decision's limiters must not be null");
      } else {
        throw new IllegalArgumentException("limiter '" + l.name() + "' belongs to another Tally than "
            + uri + "; every limiter of a joint decision must come from the Tally that decides");
      }
    }
    JointLimit.check(DefaultRateLimiter.machines(own), permitsEach);
    return own;
  }

  /** The reporter of limiters' mismatched limits, for tests. */
  Mismatches mismatches() {
    return mismatches;
  }

  /** The clock this store's expiry and limiters run on when the store has none of its own. */
  @Override
  public TimeSource timeSource() {
    return timeSource;
  }

  @Override
  public CircuitBreaker.State circuitState() {
    return circuit == null ? CircuitBreaker.State.CLOSED : circuit.state();
  }

  @Override
  public boolean storeOpen() {
    return !(openedStore instanceof DeferredStore d) || d.isOpen();
  }

  /**
   * The store behind this instance, for store-specific tools and tests: calls on it bypass
   * validation, key prefixes, failure policies and the circuit breaker.
   */
  public Store store() {
    return openedStore;
  }

  /** Closes the store: connections, files, threads. Further operations fail. */
  @Override
  public void close() {
    try {
      openedStore.close();
    } finally {
      executor.shutdown();
    }
  }


  private static StoreProvider provider(String scheme) {
    Map<String, StoreProvider> known = new TreeMap<>();
    for (StoreProvider p : ServiceLoader.load(StoreProvider.class, Tally.class.getClassLoader())) {
      for (String s : p.schemes()) {
        known.putIfAbsent(s, p);
      }
    }
    StoreProvider p = known.get(scheme);
    if (p != null) {
      return p;
    }
    String module = STORE_MODULES.get(scheme);
    if (module != null) {
      throw new IllegalArgumentException("store scheme '" + scheme + ":' needs the " + module
          + " module on the class path (dev.tally:" + module + ")");
    }
    throw new IllegalArgumentException("unknown store scheme '" + scheme + ":'; available here: "
        + String.join(":, ", known.keySet()) + ": (others come with tally-local, tally-redis,"
        + " tally-dynamodb, tally-jdbc)");
  }

  /** A daemon thread pool created on first use: most stores never need it. */
  private static final class LazyExecutor implements java.util.concurrent.Executor {
    private volatile ExecutorService pool;

    @Override
    public void execute(Runnable task) {
      ExecutorService p = pool;
      if (p == null) {
        synchronized (this) {
          if ((p = pool) == null) {
            AtomicInteger n = new AtomicInteger();
            ThreadFactory threads = r -> {
              Thread t = new Thread(r, "tally-blocking-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            };
            pool = p = Executors.newCachedThreadPool(threads);
          }
        }
      }
      p.execute(task);
    }

    synchronized void shutdown() {
      if (pool != null) {
        pool.shutdown();
      }
    }
  }
}
