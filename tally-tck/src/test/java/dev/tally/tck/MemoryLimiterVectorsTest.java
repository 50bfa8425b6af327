package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.spi.LimiterOperation;
import dev.tally.tck.LimiterVectors.Keeping;
import dev.tally.tck.LimiterVectors.Vector;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The limiter vectors on {@code mem:}, and what the vectors cover: a replay of vectors that never
 * reach an algorithm or an edge would agree on nothing worth agreeing on.
 */
class MemoryLimiterVectorsTest {

  @Test
  void memoryStoreDecidesEveryVectorAsTheMachine() {
    List<Vector> vectors = LimiterVectors.generate("vectors-", Keeping.MEMORY);
    LimiterVectorReplay.Result r = LimiterVectorReplay.replay(vectors,
        clock -> Tally.builder("mem:").timeSource(clock).build(), null, 2);
    System.out.println("mem: " + r);
    assertThat(r.disagreements()).as(r.toString()).isZero();
    assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
  }

  @Test
  void theVectorsReachEveryAlgorithmOperationAndEdge() {
    List<Vector> vectors = LimiterVectors.generate("coverage-", Keeping.POSTGRESQL);
    Set<Limit.Kind> kinds = EnumSet.noneOf(Limit.Kind.class);
    Set<LimiterOperation> ops = EnumSet.noneOf(LimiterOperation.class);
    Set<Decision.Mismatch> mismatches = EnumSet.noneOf(Decision.Mismatch.class);
    int severalLimits = 0;
    int refused = 0;
    int thrown = 0;
    int clockBack = 0;
    int hugeLimits = 0;
    for (Vector v : vectors) {
      long previous = Long.MIN_VALUE;
      for (int i = 0; i < v.size(); i++) {
        LimiterVectors.Call c = v.calls().get(i);
        c.limiter().limits().forEach(l -> kinds.add(l.kind()));
        ops.add(c.operation());
        severalLimits += c.limiter().limits().size() > 1 ? 1 : 0;
        hugeLimits += c.limiter().limits().stream().anyMatch(l -> l.limit() > 1L << 53) ? 1 : 0;
        clockBack += c.now() < previous ? 1 : 0;
        previous = c.now();
        Object answer = v.expected().get(i).answer();
        if (answer instanceof Decision d) {
          mismatches.add(d.mismatch());
          refused += d.allowed() ? 0 : 1;
        } else {
          thrown++;
        }
      }
    }
    assertThat(kinds).containsAll(EnumSet.allOf(Limit.Kind.class));
    assertThat(ops).containsAll(EnumSet.allOf(LimiterOperation.class));
    assertThat(mismatches).containsAll(EnumSet.allOf(Decision.Mismatch.class));
    assertThat(severalLimits).isGreaterThan(10_000);
    assertThat(refused).isGreaterThan(10_000);
    assertThat(thrown).isGreaterThan(100);
    assertThat(clockBack).isGreaterThan(1_000);
    assertThat(hugeLimits).isGreaterThan(1_000);
  }

  @Test
  void theSameSeedWritesTheSameVectors() {
    Vector a = LimiterVectors.vector("k-", 42, 40, Keeping.REDIS);
    Vector b = LimiterVectors.vector("k-", 42, 40, Keeping.REDIS);
    assertThat(b.calls().toString()).isEqualTo(a.calls().toString());
    assertThat(b.expected()).isEqualTo(a.expected());
  }
}
