package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shared test clock, through two mappings of one file as two processes would have. */
class MappedTimeSourceTest {
  private static final Instant START = Instant.parse("2026-11-08T00:00:00Z");
  private static final long START_NANOS = START.getEpochSecond() * 1_000_000_000L;

  @TempDir
  Path dir;

  @Test
  void aReaderSeesTheTimeTheCreatorSetsAndTheCreatorSeesEachParticipantsProgress() {
    Path file = dir.resolve("clock");
    MappedTimeSource test = MappedTimeSource.create(file, START, 2);
    MappedTimeSource child = MappedTimeSource.open(file);
    assertThat(child.nanos()).isEqualTo(START_NANOS);
    assertThat(child.participants()).isEqualTo(2);
    assertThat(test.progress(0)).isEqualTo(MappedTimeSource.NOT_YET);

    test.advance(Duration.ofMillis(3));
    assertThat(child.awaitTime(START_NANOS + 3_000_000, Duration.ofSeconds(5))).isEqualTo(START_NANOS + 3_000_000);
    child.done(0, child.nanos());
    child.done(1, child.nanos());
    test.awaitProgress(START_NANOS + 3_000_000, Duration.ofSeconds(5));
    assertThat(test.progress(1)).isEqualTo(START_NANOS + 3_000_000);
  }

  @Test
  void onlyTheCreatorMovesTheTime() {
    Path file = dir.resolve("clock");
    MappedTimeSource.create(file, START, 1);
    assertThatThrownBy(() -> MappedTimeSource.open(file).setNanos(START_NANOS + 1))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aWaitThatRunsOutNamesTheParticipantsBehind() {
    MappedTimeSource test = MappedTimeSource.create(dir.resolve("clock"), START, 3);
    test.done(0, START_NANOS);
    test.done(2, START_NANOS - 1);
    assertThatThrownBy(() -> test.awaitProgress(START_NANOS, Duration.ofMillis(20)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining(" 1 (nothing yet)")
        .hasMessageContaining(" 2 (at " + (START_NANOS - 1) + ")")
        .hasMessageNotContaining(" 0 ");
    assertThatThrownBy(() -> test.awaitTime(START_NANOS + 1, Duration.ofMillis(20)))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aFileThatIsNotAClockIsRefused() throws Exception {
    Path other = Files.write(dir.resolve("other"), new byte[256]);
    assertThatThrownBy(() -> MappedTimeSource.open(other))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a test clock file");
    Path tooShort = Files.write(dir.resolve("short"), new byte[8]);
    assertThatThrownBy(() -> MappedTimeSource.open(tooShort))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bytes");
  }
}
