package dev.tally.internal;

import dev.tally.CounterOverflowException;
import dev.tally.Counters;
import dev.tally.FailurePolicy;
import dev.tally.KeyNotFoundException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.TransactionResult;
import dev.tally.internal.CounterModel.Add;
import dev.tally.internal.CounterModel.Delete;
import dev.tally.internal.CounterModel.Failure;
import dev.tally.internal.CounterModel.Get;
import dev.tally.internal.CounterModel.Incr;
import dev.tally.internal.CounterModel.IncrBoth;
import dev.tally.internal.CounterModel.IncrExisting;
import dev.tally.internal.CounterModel.Op;
import dev.tally.internal.CounterModel.Pop;
import dev.tally.internal.CounterModel.Put;
import dev.tally.spi.Store;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Short random concurrent trials against a {@link Counters}: each trial starts from a random
 * state, lets a few threads run a few random operations on a few keys at the same moment,
 * records the history and asks {@link LinearizabilityChecker} about it.
 *
 * <p>Trials are short on purpose: a violation needs only a handful of operations to show, and
 * short histories are checked instantly, so many trials (many schedules) fit in a few seconds.
 */
final class ConcurrentTrials implements AutoCloseable {

  /** The kinds of operation a trial draws from, with how often each is drawn. */
  enum Kind {
    INCR(30), INCR_EXISTING(8), GET(14), PUT(7), ADD(7), POP(12), DELETE(8), TRANSACTION(14);

    final int weight;

    Kind(int weight) {
      this.weight = weight;
    }
  }

  /** How big each trial is, which values and which operations it uses. */
  record Shape(int threads, int opsPerThread, List<String> keys, boolean nearTheLimits, Set<Kind> kinds) {
    /** Every kind of operation. */
    Shape(int threads, int opsPerThread, List<String> keys, boolean nearTheLimits) {
      this(threads, opsPerThread, keys, nearTheLimits, EnumSet.allOf(Kind.class));
    }

    @Override
    public String toString() {
      return threads + " threads x " + opsPerThread + " ops on " + keys
          + (nearTheLimits ? " near the 64-bit limits" : "")
          + (kinds.size() == Kind.values().length ? "" : " using " + kinds);
    }
  }

  /** The outcome of one trial. */
  record Trial(long seed, CounterModel initial, History history, LinearizabilityChecker.Verdict verdict) {
    @Override
    public String toString() {
      return "trial seed " + seed + ": " + verdict;
    }
  }

  /** Values next to the 64-bit limits, where overflow is refused and {@code Long.MIN_VALUE}
   * is also the memory store's sealed marker. */
  private static final long[] EXTREMES = {
    Long.MIN_VALUE, Long.MIN_VALUE + 1, Long.MIN_VALUE + 2, Long.MAX_VALUE - 1, Long.MAX_VALUE, -1, 0
  };

  private final ExecutorService pool;
  private final int threads;

  ConcurrentTrials(int threads) {
    this.threads = threads;
    this.pool = Executors.newFixedThreadPool(threads);
  }

  /**
   * Runs one trial on fresh counters from {@code open}; {@code close} is called on what it opened
   * once the history is recorded.
   */
  <C extends AutoCloseable> Trial run(long seed, Shape shape, Supplier<C> open, Function<C, Counters> counters) {
    if (shape.threads() > threads) {
      throw new IllegalArgumentException("this pool runs at most " + threads + " threads");
    }
    Random random = new Random(seed);
    CounterModel initial = randomState(random, shape);
    List<List<Op>> programs = new ArrayList<>();
    for (int t = 0; t < shape.threads(); t++) {
      List<Op> ops = new ArrayList<>();
      for (int i = 0; i < shape.opsPerThread(); i++) {
        ops.add(randomOp(random, shape));
      }
      programs.add(ops);
    }
    C resource = open.get();
    History history;
    try {
      Counters c = counters.apply(resource);
      initial.values().forEach(c::put);
      history = runTogether(programs, random.nextLong(), op -> perform(c, op));
    } finally {
      try {
        resource.close();
      } catch (Exception e) {
        throw new AssertionError("closing the store failed", e);
      }
    }
    return new Trial(seed, initial, history, LinearizabilityChecker.check(initial, history));
  }

  /** Runs each program on its own thread, all released at once, and merges their logs. */
  private History runTogether(List<List<Op>> programs, long jitterSeed, Function<Op, Object> call) {
    int n = programs.size();
    AtomicInteger ready = new AtomicInteger();
    List<History.Log> logs = new ArrayList<>();
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < n; t++) {
      History.Log log = new History.Log(t);
      logs.add(log);
      List<Op> program = programs.get(t);
      Random jitter = new Random(jitterSeed + t);
      done.add(pool.submit(() -> {
        ready.incrementAndGet();
        while (ready.get() < n) {
          Thread.onSpinWait(); // released together, without a park/unpark between threads
        }
        for (Op op : program) {
          // A few hundred nanoseconds of random offset, so operations meet at every alignment.
          for (int spin = jitter.nextInt(64); spin > 0; spin--) {
            Thread.onSpinWait();
          }
          log.call(op, call);
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      try {
        f.get(30, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new AssertionError("a trial thread failed or hung: " + e, e);
      }
    }
    return History.merge(logs);
  }

  private static CounterModel randomState(Random random, Shape shape) {
    Map<String, Long> values = new LinkedHashMap<>();
    for (String key : shape.keys()) {
      if (random.nextBoolean()) {
        values.put(key, value(random, shape));
      }
    }
    return CounterModel.of(values);
  }

  private static Op randomOp(Random random, Shape shape) {
    String key = key(random, shape);
    switch (randomKind(random, shape.kinds())) {
      case INCR:
        return new Incr(key, delta(random, shape), random.nextInt(4) == 0 ? 100 : 0);
      case INCR_EXISTING:
        return new IncrExisting(key, delta(random, shape));
      case GET:
        return new Get(key);
      case PUT:
        return new Put(key, value(random, shape));
      case ADD:
        return new Add(key, value(random, shape));
      case POP:
        return new Pop(key);
      case DELETE:
        return new Delete(key);
      case TRANSACTION:
        return new IncrBoth(key, delta(random, shape), key(random, shape), delta(random, shape));
      default:
        throw new AssertionError();
    }
  }

  private static Kind randomKind(Random random, Set<Kind> kinds) {
    int total = kinds.stream().mapToInt(k -> k.weight).sum();
    int dice = random.nextInt(total);
    for (Kind kind : kinds) {
      dice -= kind.weight;
      if (dice < 0) {
        return kind;
      }
    }
    throw new AssertionError();
  }

  private static String key(Random random, Shape shape) {
    return shape.keys().get(random.nextInt(shape.keys().size()));
  }

  /** Distinct small deltas, so that a result tells which increments it includes. */
  private static long delta(Random random, Shape shape) {
    long[] deltas = shape.nearTheLimits() ? new long[] {1, -1, 2, -2} : new long[] {1, 2, 5, 10, 20, -3};
    return deltas[random.nextInt(deltas.length)];
  }

  private static long value(Random random, Shape shape) {
    return shape.nearTheLimits() ? EXTREMES[random.nextInt(EXTREMES.length)] : random.nextInt(50);
  }

  /** Performs {@code op} through the public API; an exception the model knows becomes its result. */
  static Object perform(Counters c, Op op) {
    try {
      if (op instanceof Incr o) {
        return c.incr(o.key(), o.delta(), o.dflt());
      } else if (op instanceof IncrExisting o) {
        return c.incrExisting(o.key(), o.delta());
      } else if (op instanceof Get o) {
        return boxed(c.get(o.key()));
      } else if (op instanceof Put o) {
        c.put(o.key(), o.value());
        return null;
      } else if (op instanceof Add o) {
        return c.add(o.key(), o.value(), null);
      } else if (op instanceof Pop o) {
        return boxed(c.pop(o.key()));
      } else if (op instanceof Delete o) {
        return c.delete(o.key());
      } else if (op instanceof IncrBoth o) {
        TransactionResult r = c.transaction(tx -> tx.incr(o.key1(), o.delta1()).incr(o.key2(), o.delta2()));
        return List.of(r.getLong(0), r.getLong(1));
      }
    } catch (KeyNotFoundException e) {
      return Failure.KEY_NOT_FOUND;
    } catch (CounterOverflowException e) {
      return Failure.OVERFLOW;
    }
    throw new IllegalArgumentException("unknown operation " + op);
  }

  private static Long boxed(OptionalLong value) {
    return value.isPresent() ? value.getAsLong() : null;
  }

  /** The public API over any store, as {@link Tally} builds it for {@code mem:}. */
  static Counters countersOver(Store store) {
    Group root = new Group("", "", FailurePolicy.THROW, store, new SyncStoreAdapter(store, Runnable::run),
        new Failures(TallyListener.NONE));
    return new DefaultCounters(root);
  }

  @Override
  public void close() {
    pool.shutdownNow();
  }
}
