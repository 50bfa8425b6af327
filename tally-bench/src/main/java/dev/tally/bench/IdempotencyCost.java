package dev.tally.bench;

import dev.tally.Counters;
import dev.tally.Tally;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What an operation id costs: {@code incr} with a fresh id per call against a plain {@code incr},
 * on the same store in the same run. The store is the {@code uri} parameter, so one command
 * measures every store side by side:
 *
 * <pre>
 * java -jar tally-bench/target/benchmarks.jar IdempotencyCost \
 *     -p uri=mem:,file:/tmp/idem,redis://127.0.0.1:6379/0,'dynamodb://t?endpoint=http://127.0.0.1:4567&amp;region=us-east-1&amp;create=true'
 * </pre>
 *
 * <p>Every idempotent call carries a new id, as a real caller's first attempt does: the cost is
 * the id's check and record, and the memory or storage that each id holds for the retention
 * window (which a long run fills; see docs/stores.md). Ratios, not absolute rates, are the
 * result: see docs/benchmarks.md.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@State(Scope.Benchmark)
@Threads(1)
@Fork(1)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class IdempotencyCost {

  @Param({"mem:"})
  public String uri;

  private Tally tally;
  private Counters counters;
  private String key;
  private final String prefix = "bench-" + UUID.randomUUID() + "-";
  private long next;

  @Setup(Level.Trial)
  public void open() {
    tally = Tally.open(uri);
    counters = tally.counters("idem-bench");
    key = "views:" + UUID.randomUUID();
    counters.incr(key);
  }

  @TearDown(Level.Trial)
  public void close() {
    counters.delete(key);
    tally.close();
  }

  @Benchmark
  public long plainIncr() {
    return counters.incr(key);
  }

  @Benchmark
  public long idempotentIncr() {
    return counters.withOperationId(prefix + next++).incr(key);
  }
}
