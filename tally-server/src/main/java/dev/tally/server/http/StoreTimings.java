package dev.tally.server.http;

import dev.tally.Decision;
import dev.tally.StoreException;
import dev.tally.TallyException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Times the server's store calls from their start to the completion of their stage, under the
 * meters {@code dev.tally.TallyMetrics} uses for synchronous calls ({@code tally.operations},
 * {@code tally.errors}, with the same tags and outcomes), so that one dashboard reads both.
 * {@code TallyMetrics} cannot time an asynchronous call: it would measure only its dispatch.
 */
final class StoreTimings {
  private final MeterRegistry registry;
  private final String store;
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();

  StoreTimings(MeterRegistry registry, String store) {
    this.registry = registry;
    this.store = store;
  }

  void done(String operation, Object result, long startNanos) {
    if (registry != null) {
      boolean denied = result instanceof Decision d && !d.allowed();
      timer(operation, denied ? "denied" : "ok").record(System.nanoTime() - startNanos,
          TimeUnit.NANOSECONDS);
    }
  }

  void failed(String operation, Throwable e, long startNanos) {
    if (registry == null) {
      return;
    }
    boolean rejected = !(e instanceof StoreException)
        && (e instanceof IllegalArgumentException || e instanceof TallyException);
    timer(operation, rejected ? "rejected" : "error").record(System.nanoTime() - startNanos,
        TimeUnit.NANOSECONDS);
    Counter.builder("tally.errors")
        .description("Operations that ended with an exception, by exception class")
        .tags("store", store, "operation", operation, "exception", e.getClass().getSimpleName())
        .register(registry)
        .increment();
  }

  private Timer timer(String operation, String outcome) {
    String id = operation + ' ' + outcome;
    Timer t = timers.get(id);
    if (t == null) {
      t = timers.computeIfAbsent(id, k -> Timer.builder("tally.operations")
          .description("Tally operations, by how they ended")
          .tags("store", store, "operation", operation, "outcome", outcome)
          .register(registry));
    }
    return t;
  }
}
