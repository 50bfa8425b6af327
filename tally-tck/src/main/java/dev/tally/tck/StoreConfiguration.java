package dev.tally.tck;

import dev.tally.Tally;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * One configuration of a store under test: a name for reports, how to open it on the kit's
 * clock, and what the kit must know about it. A store module lists one for every configuration
 * that takes a different code path (batching on and off, another sync mode, sharding) and runs
 * {@link ConformanceSuite} over the list; the name is in every reported test name, so a failure
 * says where.
 *
 * <pre>{@code
 * static List<StoreConfiguration> configurations() {
 *   return List.of(
 *       StoreConfiguration.of("file", clock -> open("", clock)),
 *       StoreConfiguration.of("file sync=always", clock -> open("?sync=always", clock)));
 * }
 * }</pre>
 */
public final class StoreConfiguration {
  private final String name;
  private final Function<ManualTimeSource, Tally> opener;
  private final boolean expiresOnServerClock;
  private final UnaryOperator<String> groupNames;
  private final int operationsPerThread;
  private final long serverClockResolutionNanos; // 0: the store runs on the kit's clock itself
  private final Freezing freezing; // null: no server to freeze (in-process and file stores)

  private StoreConfiguration(String name, Function<ManualTimeSource, Tally> opener,
      boolean expiresOnServerClock, UnaryOperator<String> groupNames, int operationsPerThread,
      long serverClockResolutionNanos, Freezing freezing) {
    this.name = Objects.requireNonNull(name, "name");
    this.opener = Objects.requireNonNull(opener, "opener");
    this.expiresOnServerClock = expiresOnServerClock;
    this.groupNames = groupNames;
    this.operationsPerThread = operationsPerThread;
    this.serverClockResolutionNanos = serverClockResolutionNanos;
    this.freezing = freezing;
  }

  /**
   * How {@link ServerFaultContract} freezes this configuration's server: the call timeout the
   * opener sets, how long the freeze lasts (longer than that timeout), and the harness's freeze.
   */
  record Freezing(Duration callTimeout, Duration freezeFor, ServerFreeze server) {
    Freezing {
      Objects.requireNonNull(server, "server");
      if (freezeFor.compareTo(callTimeout) <= 0) {
        throw new IllegalArgumentException("freeze for longer than the call timeout (" + callTimeout
            + "), or no call can time out: " + freezeFor);
      }
    }
  }

  /**
   * A configuration named {@code name}, opened by {@code opener} on the kit's clock (a new
   * instance on each call; pass the clock to {@link Tally.Builder#timeSource}).
   */
  public static StoreConfiguration of(String name, Function<ManualTimeSource, Tally> opener) {
    return new StoreConfiguration(name, opener, false, UnaryOperator.identity(), 2_000, 0, null);
  }

  /**
   * Counters expire on the server's own clock, which the kit cannot drive (Redis' key expiry):
   * letting time pass sleeps for real. Limiters and operation ids still follow the kit's clock.
   */
  public StoreConfiguration expiringOnServerClock() {
    return new StoreConfiguration(name, opener, true, groupNames, operationsPerThread, serverClockResolutionNanos,
        freezing);
  }

  /** Each test's group name passes through {@code names}, e.g. into a Redis Cluster hash tag. */
  public StoreConfiguration groupNames(UnaryOperator<String> names) {
    return new StoreConfiguration(name, opener, expiresOnServerClock, names, operationsPerThread,
        serverClockResolutionNanos, freezing);
  }

  /** Fewer (or more) operations per thread in the concurrency suite, for a slow server. */
  public StoreConfiguration operationsPerThread(int n) {
    return new StoreConfiguration(name, opener, expiresOnServerClock, groupNames, n, serverClockResolutionNanos,
        freezing);
  }

  /**
   * The store decides on its server's own clock, as in production (no clock is supplied to
   * Tally), and the harness makes that clock follow the kit's ({@link ManualTimeSource#follow}),
   * to {@code resolution} (Redis' {@code TIME}: a microsecond). The client's clock is then real,
   * not the kit's. The few cases that need decisions to the nanosecond, or instants the client
   * computes on its own clock, are skipped for such a configuration; everything else runs.
   */
  public StoreConfiguration onServerClock(Duration resolution) {
    return new StoreConfiguration(name, opener, expiresOnServerClock, groupNames, operationsPerThread,
        resolution.toNanos(), freezing);
  }

  /**
   * The server behind this configuration can be frozen: {@link ServerFaultContract} freezes it
   * through {@code server} for {@code freezeFor} (longer than {@code callTimeout}, the timeout the
   * opener gives the store) while threads increment and decide. Every networked configuration
   * declares this; without it the fault contract is skipped (no server: {@code mem:}, files).
   */
  public StoreConfiguration freezable(Duration callTimeout, Duration freezeFor, ServerFreeze server) {
    return new StoreConfiguration(name, opener, expiresOnServerClock, groupNames, operationsPerThread,
        serverClockResolutionNanos, new Freezing(callTimeout, freezeFor, server));
  }

  /** How to freeze the server, or null when there is none. */
  Freezing freezing() {
    return freezing;
  }

  /** Whether the store decides at the kit's clock to the nanosecond (false for {@link #onServerClock}). */
  public boolean decidesAtTheKitsClock() {
    return serverClockResolutionNanos == 0;
  }

  /** The name in reports. */
  public String name() {
    return name;
  }

  /** Opens the store on {@code clock}. */
  public Tally open(ManualTimeSource clock) {
    return opener.apply(clock);
  }

  /** Lets {@code d} pass for the store: advances {@code clock}, and sleeps as well if expiry is the server's. */
  public void advance(ManualTimeSource clock, Duration d) {
    clock.advance(d);
    if (expiresOnServerClock) {
      try {
        Thread.sleep(d.toMillis(), (int) (d.toNanos() % 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while letting time pass", e);
      }
    }
  }

  /** The group name a test uses for {@code unique}. */
  public String group(String unique) {
    return groupNames.apply(unique);
  }

  /** Operations per thread in the concurrency suite. */
  public int operationsPerThread() {
    return operationsPerThread;
  }

  @Override
  public String toString() {
    return name;
  }
}
