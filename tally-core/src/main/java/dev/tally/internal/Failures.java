package dev.tally.internal;

import dev.tally.FailurePolicy;
import dev.tally.StoreException;
import dev.tally.TallyListener;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.lang.System.Logger.Level;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Applies a {@link FailurePolicy} to a store failure: reports it and returns (the caller then
 * answers as the policy says), or rethrows. Logging goes through {@link System.Logger}, which
 * reaches SLF4J or JUL without the core depending on either, and is throttled to one line per
 * second so an outage does not flood the log; the listener sees every event.
 */
final class Failures {
  private static final System.Logger LOG = System.getLogger("dev.tally");
  private static final long LOG_INTERVAL_NANOS = 1_000_000_000L;

  private final TallyListener listener;
  private final AtomicLong lastLog = new AtomicLong(System.nanoTime() - LOG_INTERVAL_NANOS);
  private final AtomicLong suppressed = new AtomicLong();

  Failures(TallyListener listener) {
    this.listener = listener;
  }

  /** The listener failures are reported to, which leased limiters report to as well. */
  TallyListener listener() {
    return listener;
  }

  /**
   * Throws {@code cause} unless {@code policy} answers in its place, in which case the event is
   * reported and this returns.
   */
  void answerOrThrow(FailurePolicy policy, boolean limiter, String operation, String key,
      StoreException cause) {
    if (policy == FailurePolicy.THROW || (policy == FailurePolicy.FAIL_CLOSED && !limiter)) {
      throw cause;
    }
    try {
      listener.onFailurePolicyApplied(operation, key, policy, cause);
    } catch (RuntimeException listenerBug) {
      LOG.log(Level.ERROR, "TallyListener threw; ignoring", listenerBug);
    }
    long now = System.nanoTime();
    long last = lastLog.get();
    if (now - last >= LOG_INTERVAL_NANOS && lastLog.compareAndSet(last, now)) {
      LOG.log(Level.WARNING, "{0} {1} on ''{2}'': store failed ({3}); {4} more since the last"
          + " report", policy, operation, key, cause.getMessage(), suppressed.getAndSet(0));
    } else {
      suppressed.incrementAndGet();
    }
  }

  /**
   * {@code stage}, answered by {@code answer} if it fails with a {@link StoreException} (which the
   * asynchronous API wraps in a {@link CompletionException}); any other failure passes on.
   */
  static <T> CompletionStage<T> onStoreFailure(CompletionStage<T> stage, Function<StoreException, T> answer) {
    if (stage instanceof CompletableFuture<T> f && f.isDone() && !f.isCompletedExceptionally()) {
      return stage; // an inline store's answer: nothing can fail any more, so no stage to add
    }
    return stage.exceptionally(failure -> {
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      if (cause instanceof StoreException e) {
        return answer.apply(e);
      }
      throw failure instanceof CompletionException ce ? ce : new CompletionException(cause);
    });
  }
}
