package dev.tally.server.app;

import dev.tally.Decision;
import dev.tally.StoreException;
import dev.tally.TallyException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Times the server's store calls from their start to the completion of their stage, under the
 * meters {@code dev.tally.TallyMetrics} uses for synchronous calls ({@code tally.operations},
 * {@code tally.errors}, with the same tags and outcomes), so that one dashboard reads both.
 * {@code TallyMetrics} cannot time an asynchronous call: it would measure only its dispatch.
 */
final class StoreTimings {
  private static final String[] OUTCOMES = {"ok", "denied", "rejected", "error"};

  private final MeterRegistry registry;
  private final String store;
  /** By operation (constant names, their hashes cached), then by outcome, as in OUTCOMES. */
  private final Map<String, AtomicReferenceArray<Timer>> timers = new ConcurrentHashMap<>();

  StoreTimings(MeterRegistry registry, String store) {
    this.registry = registry;
    this.store = store;
  }

  void done(String operation, Object result, long startNanos) {
    if (registry != null) {
      boolean denied = result instanceof Decision d && !d.allowed();
      timer(operation, denied ? 1 : 0).record(System.nanoTime() - startNanos,
          TimeUnit.NANOSECONDS);
    }
  }

  void failed(String operation, Throwable e, long startNanos) {
    if (registry == null) {
      return;
    }
    boolean rejected = !(e instanceof StoreException)
        && (e instanceof IllegalArgumentException || e instanceof TallyException);
    timer(operation, rejected ? 2 : 3).record(System.nanoTime() - startNanos,
        TimeUnit.NANOSECONDS);
    Counter.builder("tally.errors")
        .description("Operations that ended with an exception, by exception class")
        .tags("store", store, "operation", operation, "exception", e.getClass().getSimpleName())
        .register(registry)
        .increment();
  }

  private Timer timer(String operation, int outcome) {
    AtomicReferenceArray<Timer> byOutcome = timers.get(operation);
    if (byOutcome == null) {
      byOutcome = timers.computeIfAbsent(operation,
          k -> new AtomicReferenceArray<>(OUTCOMES.length));
    }
    Timer t = byOutcome.get(outcome);
    if (t == null) {
      // registering twice is harmless: the registry hands back the meter it has
      t = Timer.builder("tally.operations")
          .description("Tally operations, by how they ended")
          .tags("store", store, "operation", operation, "outcome", OUTCOMES[outcome])
          .register(registry);
      byOutcome.set(outcome, t);
    }
    return t;
  }
}
