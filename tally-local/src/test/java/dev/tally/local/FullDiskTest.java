package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.tck.ManualTimeSource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store on a full file system: a small tmpfs, filled up. A growth that finds no space is a
 * {@link StoreException} raised before anything is acknowledged, never a fault on the mapping
 * (SIGBUS, an {@code InternalError}); every acknowledged write is kept; the store reopens on the
 * full file system and serves reads and the writes that fit.
 *
 * <p>Needs {@code mount -t tmpfs} (root, or a user namespace that allows it); skipped with a
 * message where that is not allowed. CI runs it as root.
 */
class FullDiskTest {
  @TempDir
  Path dir;

  private Path mount;
  private final ManualTimeSource clock = new ManualTimeSource();

  @BeforeEach
  void mountSmallTmpfs() throws Exception {
    mount = dir.resolve("tmpfs");
    Files.createDirectories(mount);
    String result = run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mount.toString());
    Assumptions.assumeTrue(result == null, "skipped: cannot mount a 16 MiB tmpfs here (" + result
        + "); run as root (CI does) to test the store on a full file system");
  }

  @AfterEach
  void unmount() throws Exception {
    if (mount != null && run("umount", mount.toString()) != null) {
      run("umount", "-l", mount.toString());
    }
  }

  /** Runs a command; null if it succeeded, else what it said. */
  private static String run(String... command) throws IOException, InterruptedException {
    Process p;
    try {
      p = new ProcessBuilder(command).redirectErrorStream(true).start();
    } catch (IOException e) {
      return e.getMessage();
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return "timed out";
    }
    return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + out;
  }

  /** Fills the file system up to {@code margin} free bytes with a file of its own. */
  private Path fill(long margin) throws IOException {
    Path filler = mount.resolve("filler");
    long free = Files.getFileStore(mount).getUsableSpace();
    ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
    try (FileChannel ch = FileChannel.open(filler, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND)) {
      for (long left = free - margin; left > 0; left -= chunk.capacity()) {
        chunk.clear();
        if (left < chunk.capacity()) {
          chunk.limit((int) left);
        }
        ch.write(chunk);
      }
    }
    return filler;
  }

  private Tally open(Path data) {
    return Tally.builder("file:" + data).timeSource(clock).build();
  }

  private static String longKey(int i) {
    return String.format("%06d:", i) + "k".repeat(893); // a 900-byte key: a record of 1032 bytes
  }

  @Test
  void aFullFileSystemRefusesTheGrowthAndKeepsEveryAcknowledgedWrite() throws Exception {
    Path data = mount.resolve("data");
    List<String> acknowledged = new ArrayList<>();
    StoreException refused = null;
    Path filler;
    try (Tally t = open(data)) {
      t.counters().incr("views", 1000);
      filler = fill(600 * 1024);
      for (int i = 0; i < 100_000 && refused == null; i++) {
        String key = longKey(i);
        try {
          assertThat(t.counters().incr(key)).isEqualTo(1);
          acknowledged.add(key);
        } catch (StoreException e) {
          refused = e;
          assertThat(t.counters().get(key)).as("the refused increment left nothing").isEmpty();
        }
      }
      assertThat(refused).as("the file system ran out").isNotNull();
      assertThat(refused.getMessage()).contains("cannot grow the Tally store file")
          .contains("No space left on device").contains("Nothing was changed");
      assertThat(acknowledged).hasSizeGreaterThan(200);
      assertThat(t.counters().incr("views")).as("writes that fit go on").isEqualTo(1001);
      assertThat(t.counters().incr(acknowledged.get(7))).isEqualTo(2);
      assertThat(t.counters().keys("0")).hasSize(acknowledged.size());
    }
    // Still full: open again, for reads and the writes that fit.
    try (Tally again = open(data)) {
      assertThat(again.counters().get("views")).hasValue(1001);
      for (String key : acknowledged) {
        assertThat(again.counters().get(key)).as(key).hasValue(key.equals(acknowledged.get(7)) ? 2 : 1);
      }
      assertThat(again.counters().incr("views")).isEqualTo(1002);
      ByteArrayOutputStream report = new ByteArrayOutputStream();
      boolean sound = LocalStoreInspector.verify(data, new PrintStream(report, true, StandardCharsets.UTF_8));
      assertThat(sound).as(report.toString(StandardCharsets.UTF_8)).isTrue();

      // Space again: the key refused before now fits.
      Files.delete(filler);
      assertThat(again.counters().incr(longKey(acknowledged.size()))).isEqualTo(1);
    }
    try (Tally t = open(data)) {
      assertThat(t.counters().get(longKey(acknowledged.size()))).hasValue(1);
      assertThat(t.counters().keys("0")).hasSize(acknowledged.size() + 1);
    }
  }

  @Test
  void aStoreThatCannotBeCreatedLeavesNoFileBehind() throws Exception {
    fill(1024 * 1024); // less than a new store takes
    Path data = mount.resolve("new");
    assertThatThrownBy(() -> open(data).close())
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("cannot create the Tally store file")
        .hasMessageContaining("No space left on device");
    assertThat(data.resolve(LocalOptions.FILE_NAME)).doesNotExist();
    try (var files = Files.list(data)) {
      assertThat(files).as("no half-made file is left").isEmpty();
    }
  }
}
