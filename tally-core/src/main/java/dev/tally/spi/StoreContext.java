package dev.tally.spi;

import dev.tally.TallyListener;
import dev.tally.TimeSource;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * What Tally hands a store when opening it.
 *
 * <p>The time rule: a store with a clock of its own (Redis {@code TIME}, SQL {@code now()})
 * uses it, so that clients with skewed clocks still agree, <em>unless</em>
 * {@link #timeSourceOverridden()} says the user (typically a test) supplied a clock: then the
 * store must use {@link #timeSource()} instead, so conformance tests can script timelines on
 * every store.
 */
public final class StoreContext {
  private final TimeSource timeSource;
  private final boolean timeSourceOverridden;
  private final Executor blockingExecutor;
  private final TallyListener listener;
  private final Duration operationRetention;

  /**
   * @param timeSource the clock to use when the store has none, or when overridden
   * @param timeSourceOverridden whether the user chose {@code timeSource} explicitly
   * @param blockingExecutor where blocking work may run (the async adapter's executor)
   */
  public StoreContext(TimeSource timeSource, boolean timeSourceOverridden, Executor blockingExecutor) {
    this(timeSource, timeSourceOverridden, blockingExecutor, TallyListener.NONE);
  }

  /**
   * @param timeSource the clock to use when the store has none, or when overridden
   * @param timeSourceOverridden whether the user chose {@code timeSource} explicitly
   * @param blockingExecutor where blocking work may run (the async adapter's executor)
   * @param listener where the store reports events of its own (e.g. locally served denials)
   */
  public StoreContext(TimeSource timeSource, boolean timeSourceOverridden, Executor blockingExecutor,
      TallyListener listener) {
    this(timeSource, timeSourceOverridden, blockingExecutor, listener, OperationId.DEFAULT_RETENTION);
  }

  /**
   * @param timeSource the clock to use when the store has none, or when overridden
   * @param timeSourceOverridden whether the user chose {@code timeSource} explicitly
   * @param blockingExecutor where blocking work may run (the async adapter's executor)
   * @param listener where the store reports events of its own (e.g. locally served denials)
   * @param operationRetention how long the store remembers an {@link OperationId}
   */
  public StoreContext(TimeSource timeSource, boolean timeSourceOverridden, Executor blockingExecutor,
      TallyListener listener, Duration operationRetention) {
    this.operationRetention = OperationId.retention(operationRetention);
    this.timeSource = Objects.requireNonNull(timeSource, "timeSource");
    this.timeSourceOverridden = timeSourceOverridden;
    this.blockingExecutor = Objects.requireNonNull(blockingExecutor, "blockingExecutor");
    this.listener = Objects.requireNonNull(listener, "listener");
  }

  /** The clock for stores without one of their own, and for all stores when overridden. */
  public TimeSource timeSource() {
    return timeSource;
  }

  /** Whether the user supplied the clock; if so a store must prefer it to its own. */
  public boolean timeSourceOverridden() {
    return timeSourceOverridden;
  }

  /** An executor for blocking work that a store wants off the caller's thread. */
  public Executor blockingExecutor() {
    return blockingExecutor;
  }

  /** The user's listener, for events a store reports itself; never null. */
  public TallyListener listener() {
    return listener;
  }

  /**
   * How long the store must remember an {@link OperationId} and its result: a repeat within this
   * window returns the first result. What it costs is per store (docs/stores.md).
   */
  public Duration operationRetention() {
    return operationRetention;
  }

  /** {@link #operationRetention()} in nanoseconds. */
  public long operationRetentionNanos() {
    return operationRetention.toNanos();
  }
}
