package dev.tally;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Micrometer metrics for one store: times and counts operations, counts errors, and, as the
 * store's {@link TallyListener}, counts every answer a {@link FailurePolicy} gave on behalf of
 * a failed store and shows its {@link CircuitBreaker circuit}.
 *
 * <pre>{@code
 * TallyMetrics metrics = TallyMetrics.of(registry, "file:./tally-data");
 * try (Tally tally = Tally.builder("file:./tally-data").listener(metrics).build()) {
 *   long views = metrics.record("incr", () -> tally.counters().incr("views"));
 * }
 * }</pre>
 *
 * <p>Meters, with their Prometheus names; every one is tagged {@code store} with the URI's
 * scheme ({@code mem}, {@code file}, {@code redis}...), never the whole URI, which may hold a
 * password:
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><td>{@code tally.operations} ({@code tally_operations_seconds_*})</td>
 *       <td>timer; tags {@code operation}, {@code outcome}: {@code ok}, {@code denied} (a limiter
 *       said no), {@code rejected} (bad input, a missing key, an overflow: the caller's
 *       problem), {@code error} (the store failed, or a bug)</td></tr>
 *   <tr><td>{@code tally.errors} ({@code tally_errors_total})</td>
 *       <td>counter of the {@code rejected} and {@code error} outcomes; tags {@code operation},
 *       {@code exception} (the class's simple name)</td></tr>
 *   <tr><td>{@code tally.failure.policy} ({@code tally_failure_policy_total})</td>
 *       <td>counter of fail-open and fail-closed answers; tags {@code operation},
 *       {@code policy}</td></tr>
 *   <tr><td>{@code tally.circuit.open} ({@code tally_circuit_open})</td>
 *       <td>gauge: 1 while the store's circuit is open (calls fail at once, or one probes), 0
 *       while it is closed or there is no circuit breaker</td></tr>
 *   <tr><td>{@code tally.circuit.opened} ({@code tally_circuit_opened_total})</td>
 *       <td>counter of the circuit's openings, a failed probe's included</td></tr>
 *   <tr><td>{@code tally.circuit.rejected} ({@code tally_circuit_rejected_total})</td>
 *       <td>counter of calls failed at once, without reaching the store, because the circuit
 *       was open; each is then answered by its failure policy</td></tr>
 *   <tr><td>{@code tally.limiter.version.mismatch} ({@code tally_limiter_version_mismatch_total})</td>
 *       <td>counter of rate limiter decisions taken where the stored limits differed from the
 *       caller's ({@link TallyListener#onLimitsMismatch}); tag {@code outcome}: {@code upgraded}
 *       (the caller's newer limits replaced them), {@code adopted} (the stored newer ones
 *       applied), {@code conflict} (same version, the stored ones applied)</td></tr>
 *   <tr><td>{@code tally.lease.stock} ({@code tally_lease_stock})</td>
 *       <td>gauge: permits held now by this store's {@linkplain RateLimiter#leased leased}
 *       limiters, leased from the store and not yet granted</td></tr>
 *   <tr><td>{@code tally.lease.refills} ({@code tally_lease_refills_total})</td>
 *       <td>counter of leased limiters' store decisions for a block; tag {@code outcome}:
 *       {@code full} (every permit asked for), {@code partial}, {@code empty} (the store had
 *       none left), {@code failed} (the store failed)</td></tr>
 *   <tr><td>{@code tally.lease.permits} ({@code tally_lease_permits_total})</td>
 *       <td>counter of permits by what happened to them; tag {@code event}: {@code leased}
 *       (granted by the store into a stock), {@code returned} (given back unused because demand
 *       fell or the limiter closed), {@code expired} (their lease time, or their window, ran
 *       out unused), and tag {@code refunded}: {@code true}, or {@code false} when they were
 *       dropped instead (the store failed, or a window was about to end)</td></tr>
 * </table>
 *
 * <p>Micrometer is an <em>optional</em> dependency of tally-core: the library runs without it,
 * and only code that uses this class needs {@code io.micrometer:micrometer-core}. Timing costs
 * two {@link System#nanoTime()} reads and a lock-free timer update per operation.
 */
// "exports": MeterRegistry is the caller's own, from an optional dependency the module requires static.
@SuppressWarnings("exports")
public final class TallyMetrics implements TallyListener {
  private final MeterRegistry registry;
  private final String store;
  /** Timers by operation, one slot per {@link Outcome}: found without building tags. */
  private final ConcurrentHashMap<String, Timer[]> timers = new ConcurrentHashMap<>();
  /** 1 while the circuit is open, for the gauge; set by the circuit's events. */
  private final AtomicInteger circuitOpen = new AtomicInteger();
  private final Counter circuitOpened;
  private final Counter circuitRejected;
  /** The stocks of the open leased limiters, summed by the gauge. */
  private final Set<LongSupplier> stocks = ConcurrentHashMap.newKeySet();

  private TallyMetrics(MeterRegistry registry, String store) {
    this.registry = registry;
    this.store = store;
    Gauge.builder("tally.lease.stock", stocks, TallyMetrics::sum)
        .description("Permits held by leased limiters: leased from the store, not yet granted")
        .tags("store", store)
        .strongReference(true)
        .register(registry);
    Gauge.builder("tally.circuit.open", circuitOpen, AtomicInteger::get)
        .description("1 while the store's circuit breaker is open, else 0")
        .tags("store", store)
        .strongReference(true)
        .register(registry);
    this.circuitOpened = Counter.builder("tally.circuit.opened")
        .description("Openings of the store's circuit breaker")
        .tags("store", store)
        .register(registry);
    this.circuitRejected = Counter.builder("tally.circuit.rejected")
        .description("Calls failed at once, without reaching the store, because its circuit was open")
        .tags("store", store)
        .register(registry);
  }

  /**
   * Metrics for the store named by {@code storeUri}, registered in {@code registry}.
   *
   * @throws IllegalArgumentException if the URI has no scheme
   */
  public static TallyMetrics of(MeterRegistry registry, String storeUri) {
    Objects.requireNonNull(registry, "registry");
    return new TallyMetrics(registry, Tally.scheme(storeUri));
  }

  /** The {@code store} tag: the scheme of the store's URI. */
  public String store() {
    return store;
  }

  /**
   * Runs {@code call}, timing it as {@code operation} and classifying how it ended. A
   * {@link Decision} that was not allowed counts as {@code denied}. Exceptions are counted and
   * rethrown unchanged.
   */
  public <T> T record(String operation, Supplier<T> call) {
    long start = System.nanoTime();
    T result;
    try {
      result = call.get();
    } catch (RuntimeException | Error e) {
      long elapsed = System.nanoTime() - start;
      Outcome outcome = Outcome.of(e);
      timer(operation, outcome).record(elapsed, TimeUnit.NANOSECONDS);
      Counter.builder("tally.errors")
          .description("Operations that ended with an exception, by exception class")
          .tags("store", store, "operation", operation, "exception", e.getClass().getSimpleName())
          .register(registry)
          .increment();
      throw e;
    }
    long elapsed = System.nanoTime() - start;
    Outcome outcome = result instanceof Decision d && !d.allowed() ? Outcome.DENIED : Outcome.OK;
    timer(operation, outcome).record(elapsed, TimeUnit.NANOSECONDS);
    return result;
  }

  /** {@link #record(String, Supplier)} for an operation without a result. */
  public void record(String operation, Runnable call) {
    record(operation, () -> {
      call.run();
      return null;
    });
  }

  @Override
  public void onFailurePolicyApplied(
      String operation, String key, FailurePolicy policy, StoreException cause) {
    Counter.builder("tally.failure.policy")
        .description("Answers given by a failure policy because the store failed")
        .tags("store", store, "operation", operation, "policy", policy.name().toLowerCase(Locale.ROOT))
        .register(registry)
        .increment();
  }

  @Override
  public void onLimitsMismatch(String key, Decision.Mismatch mismatch, List<Limit> limits, long version,
      long storedVersion) {
    Counter.builder("tally.limiter.version.mismatch")
        .description("Rate limiter decisions where the stored limits differed from the caller's")
        .tags("store", store, "outcome", mismatch.name().toLowerCase(Locale.ROOT))
        .register(registry)
        .increment();
  }

  @Override
  public void onLeaseOpened(String key, LongSupplier stock) {
    stocks.add(stock);
  }

  @Override
  public void onLeaseClosed(String key, LongSupplier stock) {
    stocks.remove(stock);
  }

  @Override
  public void onLeaseRefill(String key, long requested, long granted) {
    refills(granted == 0 ? "empty" : granted < requested ? "partial" : "full").increment();
    if (granted > 0) {
      leasePermits("leased", true).increment((double) granted);
    }
  }

  @Override
  public void onLeaseRefillFailed(String key, StoreException cause) {
    refills("failed").increment();
  }

  @Override
  public void onLeaseReturned(String key, long permits, boolean refunded) {
    leasePermits("returned", refunded).increment((double) permits);
  }

  @Override
  public void onLeaseExpired(String key, long permits, boolean refunded) {
    leasePermits("expired", refunded).increment((double) permits);
  }

  private Counter refills(String outcome) {
    return Counter.builder("tally.lease.refills")
        .description("Leased limiters' store decisions for a block of permits")
        .tags("store", store, "outcome", outcome)
        .register(registry);
  }

  private Counter leasePermits(String event, boolean refunded) {
    return Counter.builder("tally.lease.permits")
        .description("Leased permits, by what happened to them")
        .tags("store", store, "event", event, "refunded", Boolean.toString(refunded))
        .register(registry);
  }

  private static double sum(Set<LongSupplier> stocks) {
    long sum = 0;
    for (LongSupplier s : stocks) {
      sum += s.getAsLong();
    }
    return sum;
  }

  @Override
  public void onCircuitOpened(String store, Throwable cause, Duration openFor) {
    circuitOpen.set(1);
    circuitOpened.increment();
  }

  @Override
  public void onCircuitClosed(String store) {
    circuitOpen.set(0);
  }

  @Override
  public void onCircuitRejected(String store) {
    circuitRejected.increment();
  }

  @SuppressWarnings("EnumOrdinal") // an array slot per outcome, as in EnumMap; never stored
  private Timer timer(String operation, Outcome outcome) {
    Timer[] byOutcome = timers.computeIfAbsent(operation, op -> new Timer[Outcome.VALUES.length]);
    Timer t = byOutcome[outcome.ordinal()];
    if (t == null) {
      // Registering is idempotent, so a race here only registers the same timer twice.
      t = Timer.builder("tally.operations")
          .description("Tally operations, by how they ended")
          .tags("store", store, "operation", operation, "outcome", outcome.tag)
          .register(registry);
      byOutcome[outcome.ordinal()] = t;
    }
    return t;
  }

  /** How an operation ended, as the {@code outcome} tag says it. */
  private enum Outcome {
    OK("ok"), DENIED("denied"), REJECTED("rejected"), ERROR("error");

    static final Outcome[] VALUES = values();
    final String tag;

    Outcome(String tag) {
      this.tag = tag;
    }

    static Outcome of(Throwable e) {
      if (e instanceof StoreException || !(e instanceof IllegalArgumentException
          || e instanceof TallyException)) {
        return ERROR;
      }
      return REJECTED;
    }
  }

  @Override
  public String toString() {
    return "TallyMetrics[" + store + "]";
  }
}
