package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Tally;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Incrementing one existing counter: {@code mem:} through the public API, against the two
 * obvious hand-rolled alternatives, {@code ConcurrentHashMap<String, AtomicLong>} and
 * {@code ConcurrentHashMap<String, LongAdder>}. Each does a map lookup by the same key and one
 * atomic add; only {@code mem:} and {@code AtomicLong} return the new value ({@code LongAdder}
 * cannot, which is why it scales and why it is no substitute for a counter whose value is read
 * on every call). {@code mem:} also validates the key, as every Tally call does.
 *
 * <p>All threads share one state, so with {@code -t 2} both threads hit the same hot key: the
 * contended case. Run once with {@code -t 1} and once with {@code -t 2}; see docs/benchmarks.md
 * for the commands and results.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
@Threads(1)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class CounterIncrBenchmark {

  /** Not final and not static, so the JIT cannot fold the key into the lookups. */
  private String key = "views:episode:512";

  private Tally tally;
  private Counters counters;
  private ConcurrentHashMap<String, AtomicLong> atomics;
  private ConcurrentHashMap<String, LongAdder> adders;

  @Setup(Level.Trial)
  public void setUp() {
    tally = Tally.open("mem:");
    counters = tally.counters();
    counters.incr(key); // an existing key: measure the hot path, not creation
    atomics = new ConcurrentHashMap<>();
    atomics.put(key, new AtomicLong());
    adders = new ConcurrentHashMap<>();
    adders.put(key, new LongAdder());
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    tally.close();
  }

  @Benchmark
  public long memIncr() {
    return counters.incr(key);
  }

  @Benchmark
  public long chmAtomicLong() {
    return atomics.get(key).incrementAndGet();
  }

  @Benchmark
  public void chmLongAdder() {
    adders.get(key).increment(); // a write to shared memory: cannot be eliminated
  }
}
