package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Tally;
import dev.tally.tck.LimiterVectorReplay;
import dev.tally.tck.LimiterVectors;
import dev.tally.tck.LimiterVectors.Keeping;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file store replays the kit's limiter vectors ({@link LimiterVectors}): every decision equal
 * to the machine's over what this store keeps.
 */
class LimiterVectorsTest {
  @TempDir
  Path dir;
  // A file per replaying thread: each runs on its own clock, and a store's sweeper reclaims what
  // has expired on its clock, which another clock, behind, may still call live.
  private final AtomicInteger files = new AtomicInteger();

  @Test
  void fileStoreDecidesEveryVectorAsTheMachine() {
    LimiterVectorReplay.Result r = LimiterVectorReplay.replay(LimiterVectors.generate("vectors-", Keeping.FILE),
        clock -> Tally.builder("file:" + dir.resolve("store-" + files.incrementAndGet())).timeSource(clock).build(),
        null, 2);
    System.out.println("file: " + r);
    assertThat(r.disagreements()).as(r.toString()).isZero();
    assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
  }
}
