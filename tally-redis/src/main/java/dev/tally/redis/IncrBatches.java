package dev.tally.redis;

import dev.tally.CounterOverflowException;
import dev.tally.NotAnIntegerException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiFunction;

/**
 * Concurrent increments of one counter, sent as one {@code INCRBY} of their sum
 * ({@link Coalescing}). Its reply is the value after all of them; the i-th in arrival order gets
 * that value less the deltas after it: what it would have returned had they reached Redis one
 * after the other, which is all that calls running at the same time may expect. Each caller
 * still gets its own, distinct value, and the counter moves by exactly the sum.
 *
 * <p>Every caller gets exactly the answer it would have had if each increment had been sent on
 * its own, in one order of the calls that agrees with when each was made (linearizable), and
 * almost always in the order they arrived ({@link Coalescing} keeps that order), because:
 * <ul>
 *   <li>Only consecutive increments of the same sign share a command, so the values in between
 *       lie between the old value and the new one: if the sum fits in 64 bits, so does every step.
 *   <li>If the shared {@code INCRBY} is refused (the sum would overflow, or the value is a
 *       floating or foreign one), Redis applied nothing, and each increment is sent again on its
 *       own, in order, for its own answer: an increment that fits never fails for having shared.
 *       The batch behind it may have gone out meanwhile (two may be in flight) and be applied
 *       first. That reorders only calls that were all waiting at the same time, which any order
 *       may serve. Any other failure (a timeout, a lost connection) is every caller's, as it
 *       would be alone.
 *   <li>Only the blocking API shares: one thread has at most one blocking call in flight, so
 *       none can see its own calls reordered. The asynchronous API keeps Lettuce's order of
 *       commands on the connection, which a caller chaining nothing may rely on.
 * </ul>
 */
final class IncrBatches {
  static final int MAX_BATCH = 256;

  /** An increment waiting for its batch. */
  record Pending(String key, long delta, CompletableFuture<Long> result) implements Coalescing.Call<Long> {}

  /** The sum of a batch does not fit in a long: sent one by one instead. */
  private static final class SumOverflow extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SumOverflow() {
      super(null, null, false, false);
    }
  }

  private final BiFunction<String, Long, CompletableFuture<Long>> incrby;
  private final Coalescing<Pending, Long> coalescing;

  /** @param incrby one {@code INCRBY key delta}, failing with Tally's exceptions */
  IncrBatches(BiFunction<String, Long, CompletableFuture<Long>> incrby) {
    this.incrby = incrby;
    this.coalescing = new Coalescing<>(2, MAX_BATCH, (first, next) -> (next.delta() < 0) == (first.delta() < 0),
        this::send, this::complete);
  }

  CompletableFuture<Long> submit(String key, long delta) {
    Pending p = new Pending(key, delta, new CompletableFuture<>());
    coalescing.submit(p);
    return p.result();
  }

  private CompletableFuture<Long> send(List<Pending> batch) {
    long sum = 0;
    for (Pending p : batch) {
      try {
        sum = Math.addExact(sum, p.delta());
      } catch (ArithmeticException e) {
        return CompletableFuture.failedFuture(new SumOverflow());
      }
    }
    return incrby.apply(batch.get(0).key(), sum);
  }

  private void complete(List<Pending> batch, Long total, Throwable failure) {
    if (failure == null) {
      long value = total;
      for (Pending p : batch) {
        value -= p.delta(); // the value before the batch: exact, since the sum fits
      }
      for (Pending p : batch) {
        value += p.delta(); // exact: every step lies between the old value and the new one
        p.result().complete(value);
      }
      return;
    }
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    boolean nothingApplied = cause instanceof SumOverflow || cause instanceof CounterOverflowException
        || cause instanceof NotAnIntegerException;
    if (batch.size() > 1 && nothingApplied) {
      for (Pending p : batch) { // pipelined on the one connection, so applied in this order
        incrby.apply(p.key(), p.delta()).whenComplete((v, f) -> {
          if (f == null) {
            p.result().complete(v);
          } else {
            p.result().completeExceptionally(f);
          }
        });
      }
      return;
    }
    for (Pending p : batch) {
      p.result().completeExceptionally(cause);
    }
  }
}
