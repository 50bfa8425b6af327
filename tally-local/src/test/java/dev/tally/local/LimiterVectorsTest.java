package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Tally;
import dev.tally.tck.Internals;
import dev.tally.tck.LimiterVectorReplay;
import dev.tally.tck.LimiterVectors;
import dev.tally.tck.LimiterVectors.Keeping;
import dev.tally.tck.LimiterVectors.Stored;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file store replays the kit's limiter vectors ({@link LimiterVectors}): every decision, and
 * the record each call leaves (its words, a tombstone's none, its last now and its expiry), equal
 * to the machine's over what this store keeps.
 */
class LimiterVectorsTest {
  @TempDir
  Path dir;
  // A file per replaying thread: each runs on its own clock.
  private final AtomicInteger files = new AtomicInteger();

  @Test
  void fileStoreDecidesEveryVectorAsTheMachine() {
    // Each replaying thread opens its store on itself, and reads the records of that one. Its
    // sweeper is stopped: it runs on the store's clock, and a clock that then steps back would
    // find live a record the sweeper took as expired (and, no longer there, decide afresh).
    // Keeping.FILE is what the store keeps between sweeps; the sweeps have tests of their own.
    ThreadLocal<LocalStore> stores = new ThreadLocal<>();
    LimiterVectorReplay.Result r = LimiterVectorReplay.replay(LimiterVectors.generate("vectors-", Keeping.FILE),
        clock -> {
          Tally tally = Tally.builder("file:" + dir.resolve("store-" + files.incrementAndGet())).timeSource(clock).build();
          LocalStore store = (LocalStore) Internals.storeOf(tally);
          store.stopMaintenance();
          stores.set(store);
          return tally;
        },
        key -> stored(stores.get().limiterState(key)), 2);
    System.out.println("file: " + r);
    assertThat(r.disagreements()).as(r.toString()).isZero();
    assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
  }

  /** A record's state: its last now, expiry ({@code 0}: never) and words ({@link LocalStore#limiterState}). */
  private static Stored stored(long[] state) {
    return state == null ? null
        : new Stored(state[0], Arrays.copyOfRange(state, 2, state.length), BigInteger.valueOf(state[1]));
  }
}
