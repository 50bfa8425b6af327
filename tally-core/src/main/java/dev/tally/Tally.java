package dev.tally;

import dev.tally.spi.OperationId;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

/**
 * An open store of counters and rate limiters: the entry point of the library.
 *
 * <p>A store is named by a URI, and every store gives the same API with the same semantics:
 *
 * <table>
 *   <caption>Store URIs</caption>
 *   <tr><td>{@code mem:}</td><td>in this process only, lock-free; nothing persisted</td></tr>
 *   <tr><td>{@code file:./tally-data}</td><td>shared by every process on the host (tally-local)</td></tr>
 *   <tr><td>{@code redis://host:6379/0}</td><td>Redis, standalone or cluster (tally-redis)</td></tr>
 *   <tr><td>{@code dynamodb://table?region=…}</td><td>DynamoDB (tally-dynamodb)</td></tr>
 *   <tr><td>{@code null:}</td><td>stores nothing: {@code incr} returns {@code default + delta}</td></tr>
 * </table>
 *
 * <pre>{@code
 * try (Tally tally = Tally.open("mem:")) {
 *   Counters counters = tally.counters();
 *   counters.incr("views:episode:512");          // 1
 *   counters.incr("k", 10);                      // 10
 *   counters.incr("other", 1, 10);               // 11: missing, so default + delta
 *   long pending = counters.pop("views:episode:512").orElse(0);
 *
 *   // a group prefixes its keys and carries its own failure policy
 *   Counters views = tally.counters("views", FailurePolicy.FAIL_OPEN);
 *   Counters quota = tally.counters("quota", FailurePolicy.THROW);
 * }
 * }</pre>
 *
 * <p>A {@code Tally} is thread-safe and meant to be shared: open one per store per process and
 * close it on shutdown. Stores other than {@code mem:} and {@code null:} are found with
 * {@link ServiceLoader} when their module is on the class path.
 */
public final class Tally implements AutoCloseable {
  private static final Pattern SCHEME = Pattern.compile("[a-z][a-z0-9+.-]*");
  /** Where the stores that are not built in live, to say which module to add. */
  private static final Map<String, String> STORE_MODULES = Map.of(
      "file", "tally-local", "redis", "tally-redis", "rediss", "tally-redis",
      "redis-cluster", "tally-redis", "redis-sentinel", "tally-redis", "dynamodb", "tally-dynamodb",
      "postgresql", "tally-jdbc");

  private final String uri;
  private final Store store;
  private final AsyncStore asyncStore;
  private final Failures failures;
  private final FailurePolicy defaultPolicy;
  private final TimeSource timeSource;
  private final LazyExecutor executor;
  private final Counters rootCounters;

  private Tally(Builder b, Store store, LazyExecutor executor) {
    this.uri = b.uri;
    this.store = store;
    this.executor = executor;
    AsyncStore nativeAsync = store.async();
    this.asyncStore = nativeAsync != null ? nativeAsync : new SyncStoreAdapter(store, executor);
    this.failures = new Failures(b.listener);
    this.defaultPolicy = b.failurePolicy;
    this.timeSource = b.timeSource;
    this.rootCounters = new DefaultCounters(new Group("", "", defaultPolicy, store, asyncStore, failures));
  }

  /** Opens the store named by {@code uri} with default settings. */
  public static Tally open(String uri) {
    return builder(uri).build();
  }

  /** A builder for a store, to set a clock, a default failure policy or a listener. */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /** The URI this was opened with. */
  public String uri() {
    return uri;
  }

  /** The counters of this store, with keys used as given and the default failure policy. */
  public Counters counters() {
    return rootCounters;
  }

  /**
   * A named group of counters: keys are prefixed with {@code group + ":"}, so
   * {@code counters("views").incr("episode:512")} counts {@code views:episode:512}.
   */
  public Counters counters(String group) {
    return counters(group, defaultPolicy);
  }

  /** A named group of counters with its own failure policy. */
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
  public RateLimiter limiter(String name, Limit... limits) {
    return newLimiter(name, limits);
  }

  /**
   * Finds or creates the leaky bucket {@code name}: {@code capacity} deep, draining fully in
   * {@code rate}. If the store holds the bucket already, its stored capacity, rate and level
   * apply.
   */
  public LeakyBucket leakyBucket(String name, long capacity, Duration rate) {
    return new DefaultLeakyBucket(newLimiter(name, Limit.leakyBucket(capacity, rate)), timeSource);
  }

  /** A calendar quota: {@code allowance} units per {@code period} in {@code zone}. */
  public Quota quota(String name, long allowance, Limit.Period period, ZoneId zone) {
    return newLimiter(name, Limit.quota(allowance, period, zone));
  }

  private DefaultRateLimiter newLimiter(String name, Limit... limits) {
    String key = Checks.key("", name);
    Objects.requireNonNull(limits, "limits");
    for (Limit l : limits) {
      Objects.requireNonNull(l, "limit");
    }
    return new DefaultRateLimiter(new LimiterMachine(key, List.of(limits)), store, asyncStore, defaultPolicy,
        failures);
  }

  /** The clock this store's expiry and limiters run on when the store has none of its own. */
  public TimeSource timeSource() {
    return timeSource;
  }

  /**
   * The store behind this instance, for store-specific tools and tests: calls on it bypass
   * validation, key prefixes and failure policies.
   */
  public Store store() {
    return store;
  }

  /** Closes the store: connections, files, threads. Further operations fail. */
  @Override
  public void close() {
    try {
      store.close();
    } finally {
      executor.shutdown();
    }
  }

  @Override
  public String toString() {
    return "Tally[" + uri + "]";
  }

  /** Settings for opening a store. */
  public static final class Builder {
    private final String uri;
    private TimeSource timeSource = TimeSource.system();
    private boolean timeSourceOverridden;
    private FailurePolicy failurePolicy = FailurePolicy.THROW;
    private TallyListener listener = TallyListener.NONE;
    private Duration operationRetention = OperationId.DEFAULT_RETENTION;

    private Builder(String uri) {
      this.uri = uri;
    }

    /**
     * Runs expiry and limiters on this clock. Stores with a clock of their own (Redis) use it
     * instead of theirs: meant for tests that script a timeline.
     */
    public Builder timeSource(TimeSource timeSource) {
      this.timeSource = Objects.requireNonNull(timeSource, "timeSource");
      this.timeSourceOverridden = true;
      return this;
    }

    /** The failure policy of {@link Tally#counters()} and of groups that name none. */
    public Builder failurePolicy(FailurePolicy policy) {
      this.failurePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** Receives fail-open and fail-closed events, e.g. to count them in metrics. */
    public Builder listener(TallyListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * How long the store remembers an operation id and its result (see
     * {@link Counters#withOperationId}); an hour by default. Longer costs more memory or storage
     * per id on every store: docs/stores.md gives the figures.
     */
    public Builder operationRetention(Duration retention) {
      this.operationRetention = OperationId.retention(retention);
      return this;
    }

    /**
     * Opens the store.
     *
     * @throws IllegalArgumentException if the URI is malformed or names an unknown store
     * @throws StoreException if the store cannot be opened
     */
    public Tally build() {
      String scheme = scheme(uri);
      LazyExecutor executor = new LazyExecutor();
      StoreContext context = new StoreContext(timeSource, timeSourceOverridden, executor, listener,
          operationRetention);
      Store store = provider(scheme).open(uri, context);
      return new Tally(this, store, executor);
    }
  }

  static String scheme(String uri) {
    if (uri == null || uri.isBlank()) {
      throw new IllegalArgumentException("store URI is empty; try mem:, file:./tally-data or"
          + " redis://localhost:6379");
    }
    int colon = uri.indexOf(':');
    String scheme = colon < 0 ? "" : uri.substring(0, colon);
    if (!SCHEME.matcher(scheme).matches()) {
      throw new IllegalArgumentException("store URI '" + uri + "' does not start with a scheme;"
          + " try mem:, file:./tally-data or redis://localhost:6379");
    }
    return scheme;
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
