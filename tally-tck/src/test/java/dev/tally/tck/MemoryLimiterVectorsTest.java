package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.spi.LimiterOperation;
import dev.tally.internal.MemoryLimiterStates;
import dev.tally.spi.Store;
import dev.tally.tck.LimiterVectors.Keeping;
import dev.tally.tck.LimiterVectors.Stored;
import dev.tally.tck.LimiterVectors.Vector;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The limiter vectors on {@code mem:} (every decision, and the cell each call leaves: its words,
 * decision instant and expiry), and what the vectors cover: a replay of vectors that never
 * reach an algorithm or an edge would agree on nothing worth agreeing on.
 */
class MemoryLimiterVectorsTest {

  @Test
  void memoryStoreDecidesEveryVectorAsTheMachine() {
    List<Vector> vectors = LimiterVectors.generate("vectors-", Keeping.MEMORY);
    // Each replaying thread opens its store on itself, and reads the cells of that one. Its
    // sweep is stopped: Keeping.MEMORY is what the store keeps between sweeps (a sweep drops an
    // expired state whose instant a clock stepping back would decide at); sweeps have tests of their own.
    ThreadLocal<Store> stores = new ThreadLocal<>();
    LimiterVectorReplay.Result r = LimiterVectorReplay.replay(vectors, clock -> {
      Tally tally = Tally.builder("mem:").timeSource(clock).build();
      Store store = Internals.storeOf(tally);
      MemoryLimiterStates.stopSweeping(store);
      stores.set(store);
      return tally;
    }, key -> stored(MemoryLimiterStates.read(stores.get(), key)), 2);
    System.out.println("mem: " + r);
    assertThat(r.disagreements()).as(r.toString()).isZero();
    assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
  }

  /** A cell's state: its instant, expiry and words ({@link MemoryLimiterStates#read}). */
  private static Stored stored(long[] state) {
    return state == null ? null
        : new Stored(state[0], Arrays.copyOfRange(state, 2, state.length), BigInteger.valueOf(state[1]));
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
    int withIds = 0;
    int repeats = 0;
    int conflicts = 0;
    int repeatedAtOnce = 0;
    int joint = 0;
    int jointOfThree = 0;
    int jointRefused = 0;
    for (Vector v : vectors) {
      long previous = Long.MIN_VALUE;
      Set<String> ids = new java.util.HashSet<>();
      for (int i = 0; i < v.size(); i++) {
        LimiterVectors.Call c = v.calls().get(i);
        if (c.operationId() != null) {
          withIds++;
          if (!ids.add(c.operationId())) {
            repeats++;
            repeatedAtOnce += c.operationId().equals(v.calls().get(i - 1).operationId()) ? 1 : 0;
          }
          conflicts += v.expected().get(i).answer() == dev.tally.OperationIdConflictException.class ? 1 : 0;
        }
        c.limiter().limits().forEach(l -> kinds.add(l.kind()));
        ops.add(c.operation());
        severalLimits += c.limiter().limits().size() > 1 ? 1 : 0;
        hugeLimits += c.limiter().limits().stream().anyMatch(l -> l.limit() > 1L << 53) ? 1 : 0;
        clockBack += c.now() < previous ? 1 : 0;
        previous = c.now();
        Object answer = v.expected().get(i).answer();
        if (c.joint() != null) {
          joint++;
          jointOfThree += c.joint().size() == 3 ? 1 : 0;
          jointRefused += answer instanceof List<?> ds && ds.stream().anyMatch(d -> !((Decision) d).allowed()) ? 1 : 0;
        } else if (answer instanceof Decision d) {
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
    assertThat(withIds).isGreaterThan(10_000);
    assertThat(repeats).isGreaterThan(3_000);
    assertThat(repeatedAtOnce).isGreaterThan(500);
    assertThat(conflicts).isGreaterThan(500);
    assertThat(joint).isGreaterThan(3_000);
    assertThat(jointOfThree).isGreaterThan(1_000);
    assertThat(jointRefused).isGreaterThan(1_000);
  }

  @Test
  void theSameSeedWritesTheSameVectors() {
    Vector a = LimiterVectors.vector("k-", 42, 40, Keeping.REDIS);
    Vector b = LimiterVectors.vector("k-", 42, 40, Keeping.REDIS);
    assertThat(b.calls().toString()).isEqualTo(a.calls().toString());
    assertThat(b.expected()).isEqualTo(a.expected());
  }
}
