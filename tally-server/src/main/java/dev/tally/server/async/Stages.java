package dev.tally.server.async;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * {@code thenApply} and {@code handle} for stages that are most often complete already (every
 * call on an in-process store): the function runs at once, without the dependent stage and the
 * completion machinery {@code CompletableFuture} builds for a stage that might still be running.
 */
public final class Stages {
  private Stages() {}

  /** {@code stage}'s value, or {@code failed}'s answer to its failure; {@code stage} is done. */
  public static <T> T now(CompletableFuture<T> stage, Function<Throwable, T> failed) {
    try {
      return stage.join();
    } catch (CompletionException | CancellationException e) {
      return failed.apply(e);
    }
  }

  public static <T, U> CompletionStage<U> map(CompletionStage<T> stage, Function<? super T, ? extends U> fn) {
    if (stage instanceof CompletableFuture<T> f && f.isDone() && !f.isCompletedExceptionally()) {
      try {
        return CompletableFuture.completedFuture(fn.apply(f.join()));
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    return stage.thenApply(fn);
  }

  /** As {@link CompletionStage#handle}: the failure, if any, as the stage would give it. */
  public static <T, U> CompletionStage<U> handle(CompletionStage<T> stage,
      BiFunction<? super T, Throwable, ? extends U> fn) {
    if (stage instanceof CompletableFuture<T> f && f.isDone()) {
      T value = null;
      Throwable failure = null;
      try {
        value = f.join();
      } catch (CompletionException | CancellationException e) {
        failure = e;
      }
      try {
        return CompletableFuture.completedFuture(fn.apply(value, failure));
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    return stage.handle(fn);
  }

  /**
   * As {@code exceptionallyCompose} with {@code instead} for the failures {@code when} accepts
   * (given unwrapped), the others passed on; a stage that succeeded already is returned as it is.
   */
  public static <T> CompletionStage<T> recover(CompletionStage<T> stage, Predicate<Throwable> when,
      Supplier<CompletionStage<T>> instead) {
    if (stage instanceof CompletableFuture<T> f && f.isDone() && !f.isCompletedExceptionally()) {
      return stage;
    }
    return stage.exceptionallyCompose(e -> when.test(unwrap(e)) ? instead.get()
        : CompletableFuture.failedFuture(e));
  }

  /**
   * {@code stage} as a stage of a supertype of its values, without a dependent stage to convert
   * them. Only for stages that are read, never completed, by whoever holds the result.
   */
  @SuppressWarnings("unchecked") // reading a T where an S was produced is sound: S extends T
  public static <T> CompletionStage<T> widen(CompletionStage<? extends T> stage) {
    return (CompletionStage<T>) stage;
  }

  /** The cause a stage failed with, without the wrappers of {@code CompletableFuture}. */
  public static Throwable unwrap(Throwable t) {
    Throwable e = t;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /** {@code e} as thrown from inside a stage's function, so the dependent stage fails with it. */
  public static RuntimeException unchecked(Throwable e) {
    if (e instanceof Error err) {
      throw err;
    }
    return e instanceof RuntimeException r ? r : new CompletionException(e);
  }
}
