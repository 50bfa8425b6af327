package dev.tally;

import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.concurrent.CompletionStage;
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
 *
 * <p>This class is the API only: {@link Builder#build()} finds its implementation (in
 * tally-core, beside the store contract {@code dev.tally.spi}) through {@link Implementation},
 * so that this package names neither the implementation nor the store contract, whose types
 * use this package's values. Applications may subclass it as a test double.
 */
public abstract class Tally implements AutoCloseable {
  /** How long a store remembers an operation id unless told otherwise. */
  public static final Duration DEFAULT_OPERATION_RETENTION = Duration.ofHours(1);

  private static final Pattern SCHEME = Pattern.compile("[a-z][a-z0-9+.-]*");

  /** For the implementation, and for test doubles. */
  protected Tally() {}

  /** Opens the store named by {@code uri} with default settings. */
  public static Tally open(String uri) {
    return builder(uri).build();
  }

  /** A builder for a store, to set a clock, a default failure policy or a listener. */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /**
   * The scheme of a store URI ({@code redis} of {@code redis://host:6379}), checked.
   *
   * @throws IllegalArgumentException if the URI is empty or does not start with a scheme
   */
  public static String scheme(String uri) {
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

  /** The URI this was opened with. */
  public abstract String uri();

  /** The counters of this store, with keys used as given and the default failure policy. */
  public abstract Counters counters();

  /**
   * A named group of counters: keys are prefixed with {@code group + ":"}, so
   * {@code counters("views").incr("episode:512")} counts {@code views:episode:512}.
   */
  public abstract Counters counters(String group);

  /** A named group of counters with its own failure policy. */
  public abstract Counters counters(String group, FailurePolicy policy);

  /**
   * A rate limiter named {@code name} (the key of its state) applying every one of
   * {@code limits}: a request is granted only if all allow, and then consumes from all.
   *
   * <pre>{@code
   * RateLimiter api = tally.limiter("api:user:42", Limit.tokenBucket(100, Duration.ofMinutes(1)));
   * if (api.tryAcquire()) { ... }
   * }</pre>
   */
  public abstract RateLimiter limiter(String name, Limit... limits);

  /**
   * A concurrency limit named {@code name} (the key of its state): at most {@code maxPermits}
   * permits held at once by leases that expire.
   *
   * <pre>{@code
   * ConcurrencyLimit gpus = tally.concurrency("gpu-pool:a", 3);
   * try (Lease lease = gpus.acquire(Duration.ofMinutes(10), Duration.ofSeconds(30)).orElseThrow()) {
   *   runJob(lease.fencingToken());
   * }
   * }</pre>
   *
   * <p>This implementation, for test doubles, throws {@link UnsupportedOperationException}.
   *
   * @throws IllegalArgumentException if {@code maxPermits} is not positive or the name is not a valid key
   */
  public ConcurrencyLimit concurrency(String name, long maxPermits) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " has no concurrency limits");
  }

  /**
   * One decision across several limiters ("user AND tenant AND global"): takes {@code permits}
   * from every one of {@code limiters} if every one allows, and otherwise from none, as one atomic
   * step on the store. The answer says which limiter refused, and with which of its limits.
   *
   * <pre>{@code
   * JointDecision d = tally.decide(List.of(userLimiter, tenantLimiter, globalLimiter), 1);
   * if (!d.allowed()) {
   *   return tooManyRequests(d.refusedBy(), d.retryAfter());
   * }
   * }</pre>
   *
   * On a store that fails, each limiter's failure policy answers for it (the first one that
   * throws, throws), and the request is allowed only if every answer allows. On Redis Cluster
   * every limiter's name must hash to one slot: give them one hash tag (docs/limiters.md).
   *
   * @param permitsEach the permits taken from each limiter, zero or more; 0 allows and reports every limiter's state
   * @throws IllegalArgumentException if {@code limiters} is empty, names one key twice, or holds
   *     a limiter of another {@code Tally} or one {@linkplain RateLimiter#withOperationId with an
   *     operation id}
   * @throws UnsupportedOperationException if the store cannot decide several keys atomically
   */
  public abstract JointDecision decide(List<RateLimiter> limiters, long permitsEach);

  /** The asynchronous form of {@link #decide(List, long)}: the same checks, thrown at once. */
  public abstract CompletionStage<JointDecision> decideAsync(List<RateLimiter> limiters, long permitsEach);

  /**
   * Finds or creates the leaky bucket {@code name}: {@code capacity} deep, draining fully in
   * {@code rate}. If the store holds the bucket already, its stored capacity, rate and level
   * apply.
   */
  public abstract LeakyBucket leakyBucket(String name, long capacity, Duration rate);

  /** A calendar quota: {@code allowance} units per {@code period} in {@code zone}. */
  public abstract Quota quota(String name, long allowance, Limit.Period period, ZoneId zone);

  /** The clock this store's expiry and limiters run on when the store has none of its own. */
  public abstract TimeSource timeSource();

  /**
   * Where the store's {@link Builder#circuitBreaker(CircuitBreaker) circuit breaker} stands, for
   * health checks: {@link CircuitBreaker.State#CLOSED} when calls go to the store (always,
   * without a breaker), {@link CircuitBreaker.State#OPEN} when they fail at once,
   * {@link CircuitBreaker.State#HALF_OPEN} when a probe of the store is due or in flight. This
   * implementation, for test doubles, says {@code CLOSED}.
   */
  public CircuitBreaker.State circuitState() {
    return CircuitBreaker.State.CLOSED;
  }

  /**
   * Whether the store has been opened: false only for a Tally built with
   * {@link Builder#deferOpen(boolean) deferOpen} whose store has not answered yet. This
   * implementation, for test doubles, says {@code true}.
   */
  public boolean storeOpen() {
    return true;
  }

  /** Closes the store: connections, files, threads. Further operations fail. */
  @Override
  public abstract void close();

  @Override
  public String toString() {
    return "Tally[" + uri() + "]";
  }

  /**
   * What {@link Builder#build()} opens a store with: provided by tally-core and found with
   * {@link ServiceLoader}. Not for applications.
   */
  public interface Implementation {
    /**
     * Opens the store the settings name.
     *
     * @throws IllegalArgumentException if the URI is malformed or names an unknown store
     * @throws StoreException if the store cannot be opened
     */
    Tally open(Builder settings);
  }

  /** Settings for opening a store. */
  public static final class Builder {
    private final String uri;
    private TimeSource timeSource = TimeSource.system();
    private boolean timeSourceSupplied;
    private FailurePolicy failurePolicy = FailurePolicy.THROW;
    private TallyListener listener = TallyListener.NONE;
    private Duration operationRetention = DEFAULT_OPERATION_RETENTION;
    private CircuitBreaker circuitBreaker = CircuitBreaker.DISABLED;
    private boolean deferOpen;

    private Builder(String uri) {
      this.uri = uri;
    }

    /**
     * Runs expiry and limiters on this clock. Stores with a clock of their own (Redis) use it
     * instead of theirs: meant for tests that script a timeline.
     */
    public Builder timeSource(TimeSource timeSource) {
      this.timeSource = Objects.requireNonNull(timeSource, "timeSource");
      this.timeSourceSupplied = true;
      return this;
    }

    /** The failure policy of {@link Tally#counters()} and of groups that name none. */
    public Builder failurePolicy(FailurePolicy policy) {
      this.failurePolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * Receives fail-open and fail-closed events and the circuit breaker's, e.g. to count them in
     * metrics.
     */
    public Builder listener(TallyListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * How long the store remembers an operation id and its result (see
     * {@link Counters#withOperationId}); {@link #DEFAULT_OPERATION_RETENTION an hour} by default.
     * Longer costs more memory or storage per id on every store: docs/stores.md gives the
     * figures.
     */
    public Builder operationRetention(Duration retention) {
      Objects.requireNonNull(retention, "retention");
      if (retention.isNegative() || retention.isZero()) {
        throw new IllegalArgumentException("operation id retention must be positive, not " + retention);
      }
      this.operationRetention = retention;
      return this;
    }

    /**
     * Stops calling a store that keeps failing, for a while, so that operations answer by their
     * {@link FailurePolicy} at once rather than each after the store's timeout: see
     * {@link CircuitBreaker}. {@link CircuitBreaker#DISABLED} by default in this version, so a
     * library user's calls wait for the store as before; tally-server and the Spring Boot starter
     * use {@link CircuitBreaker#DEFAULT}.
     */
    public Builder circuitBreaker(CircuitBreaker circuitBreaker) {
      this.circuitBreaker = Objects.requireNonNull(circuitBreaker, "circuitBreaker");
      return this;
    }

    /**
     * Whether {@link #build()} may return a Tally whose store did not answer yet: with
     * {@code true}, a store that cannot be reached at build time (a {@link StoreException} from
     * its opening; a malformed URI still throws) is opened by the first call that finds it
     * reachable, and until then every call fails with a {@link StoreUnavailableException},
     * answered by its {@link FailurePolicy} (and, with a {@link #circuitBreaker circuit
     * breaker}, refused at once between probes). So a service can start during an outage.
     * {@code false} by default in this version: {@code build()} throws as before. The Spring
     * Boot starter sets it unless {@code tally.fail-on-startup-without-store=true}.
     */
    public Builder deferOpen(boolean deferOpen) {
      this.deferOpen = deferOpen;
      return this;
    }

    /** Whether a store that cannot be reached at build time is opened later: see {@link #deferOpen(boolean)}. */
    public boolean deferOpen() {
      return deferOpen;
    }

    /** The store URI. */
    public String uri() {
      return uri;
    }

    /** The clock: the system's unless {@link #timeSource(TimeSource)} supplied one. */
    public TimeSource timeSource() {
      return timeSource;
    }

    /** Whether {@link #timeSource(TimeSource)} supplied the clock. */
    public boolean timeSourceSupplied() {
      return timeSourceSupplied;
    }

    /** The default failure policy. */
    public FailurePolicy failurePolicy() {
      return failurePolicy;
    }

    /** The listener of fail-open and fail-closed events. */
    public TallyListener listener() {
      return listener;
    }

    /** How long operation ids are remembered. */
    public Duration operationRetention() {
      return operationRetention;
    }

    /** The circuit breaker's settings: {@link CircuitBreaker#DISABLED} unless set. */
    public CircuitBreaker circuitBreaker() {
      return circuitBreaker;
    }

    /**
     * Opens the store.
     *
     * @throws IllegalArgumentException if the URI is malformed or names an unknown store
     * @throws StoreException if the store cannot be opened
     */
    public Tally build() {
      return Loaded.IMPLEMENTATION.open(this);
    }
  }

  /** The implementation, looked up once, on first use. */
  private static final class Loaded {
    static final Implementation IMPLEMENTATION = load();

    private static Implementation load() {
      for (Implementation i : ServiceLoader.load(Implementation.class, Tally.class.getClassLoader())) {
        return i;
      }
      throw new IllegalStateException("no Tally implementation found: tally-core's dev.tally.internal is"
          + " missing from the class path or module path (dev.tally:tally-core)");
    }
  }
}
