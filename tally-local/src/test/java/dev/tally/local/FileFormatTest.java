package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.tck.ManualTimeSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The file is ours or it is refused: never reinterpreted, never written to. */
class FileFormatTest {
  @TempDir
  Path dir;

  private Path createStore() {
    Path file = dir.resolve("counters.tally");
    try (Tally t = Tally.open("file:" + file)) {
      t.counters().incr("k", 41);
    }
    return file;
  }

  private static void writeAt(Path file, long at, ByteBuffer b) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(b, at);
    }
  }

  @Test
  void aDirectoryUriGetsAStoreFileInside() {
    Path data = dir.resolve("tally-data");
    try (Tally t = Tally.open("file:" + data)) {
      t.counters().incr("k");
    }
    assertThat(data.resolve(LocalOptions.FILE_NAME)).isRegularFile();
  }

  @Test
  void valuesAndExpirySurviveReopening() {
    ManualTimeSource clock = new ManualTimeSource();
    Path data = dir.resolve("tally-data");
    try (Tally t = Tally.builder("file:" + data).timeSource(clock).build()) {
      t.counters().incr("views", 7);
      t.counters().put("ratio", 0.25, null);
      t.counters().put("session", 3, Duration.ofMinutes(5));
      t.counters().put("gone", 1, Duration.ofSeconds(1));
      t.counters().delete("views");
      t.counters().incr("views", 8);
    }
    clock.advance(Duration.ofSeconds(2));
    try (Tally t = Tally.builder("file:" + data).timeSource(clock).build()) {
      assertThat(t.counters().get("views")).hasValue(8);
      assertThat(t.counters().getDouble("ratio")).hasValue(0.25);
      assertThat(t.counters().ttl("session")).hasValueSatisfying(d ->
          assertThat(d).isLessThanOrEqualTo(Duration.ofMinutes(5)).isGreaterThan(Duration.ofMinutes(4)));
      assertThat(t.counters().get("gone")).isEmpty();
      assertThat(t.counters().keys("")).containsExactlyInAnyOrder("views", "ratio", "session");
    }
  }

  @Test
  void aForeignFileIsRefusedAndLeftUntouched() throws IOException {
    Path file = dir.resolve("notes.tally");
    Files.writeString(file, "these are my notes, not a counter store\n".repeat(200));
    byte[] before = Files.readAllBytes(file);
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("not a Tally store file")
        .hasMessageContaining(file.getFileName().toString());
    assertThat(Files.readAllBytes(file)).isEqualTo(before);
  }

  @Test
  void aTinyForeignFileIsRefused() throws IOException {
    Path file = dir.resolve("tiny.tally");
    Files.writeString(file, "hi");
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("not a Tally store file");
  }

  @Test
  void aTruncatedFileIsRefused() throws IOException {
    Path file = createStore();
    long size = Files.size(file);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.truncate(size - Layout.PAGE);
    }
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("truncated");
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.truncate(1000);
    }
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("truncated");
  }

  @Test
  void aNewerFormatIsRefused() throws IOException {
    Path file = createStore();
    writeAt(file, Layout.H_VERSION, ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 2));
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("newer version of Tally")
        .hasMessageContaining("format 2");
  }

  @Test
  void aCorruptHeaderIsRefused() throws IOException {
    Path file = createStore();
    writeAt(file, Layout.H_HEAP0_BYTES, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1 << 20));
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("corrupt");
  }

  @Test
  void aStoreFileWhoseMagicNumberWasZeroedIsRefusedNotStartedOver() throws IOException {
    Path file = createStore();
    writeAt(file, Layout.H_MAGIC, ByteBuffer.allocate(8));
    byte[] before = Files.readAllBytes(file);
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("damaged Tally header");
    assertThat(Files.readAllBytes(file)).isEqualTo(before);
  }

  @Test
  void anEmptyStoreFileIsRefusedUnlessTallyCreatesIt() throws IOException {
    Path data = dir.resolve("tally-data");
    Files.createDirectories(data);
    Path file = Files.createFile(data.resolve(LocalOptions.FILE_NAME));
    assertThatThrownBy(() -> Tally.open("file:" + data))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining(file.toString())
        .hasMessageContaining("is empty")
        .hasMessageContaining("remove it to start a new store");
    assertThat(Files.size(file)).as("left as it was").isZero();
    Files.delete(file);
    try (Tally t = Tally.open("file:" + data)) { // the file is new: created whole
      assertThat(t.counters().incr("k")).isEqualTo(1);
    }
  }

  @Test
  void aStoreFileTooShortForItsHeaderIsRefused() throws IOException {
    Path file = createStore();
    byte[] start = java.util.Arrays.copyOf(Files.readAllBytes(file), 100);
    Files.write(file, start);
    assertThatThrownBy(() -> Tally.open("file:" + file))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("truncated");
    assertThat(Files.readAllBytes(file)).isEqualTo(start);
  }

  @Test
  void aCreationAbandonedByADeadProcessIsCleanedUp() throws IOException {
    Path data = dir.resolve("tally-data");
    Files.createDirectories(data);
    Path abandoned = Files.write(data.resolve(LocalOptions.FILE_NAME + ".creating-999999999-1f"), new byte[4096]);
    try (Tally t = Tally.open("file:" + data)) {
      assertThat(t.counters().incr("k")).isEqualTo(1);
    }
    assertThat(abandoned).doesNotExist();
    try (var files = Files.list(data)) {
      assertThat(files.map(f -> f.getFileName().toString())).containsExactly(LocalOptions.FILE_NAME);
    }
  }

  // ---------------------------------------------------------------- permissions

  private static String mode(Path p) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
  }

  @Test
  void aNewStoreAndItsDirectoriesAreTheOwnersOnly() throws IOException {
    Path existing = Files.createDirectory(dir.resolve("existing"));
    Files.setPosixFilePermissions(existing, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path data = existing.resolve("a/b");
    try (Tally t = Tally.open("file:" + data)) {
      t.counters().incr("k");
    }
    assertThat(mode(data.resolve(LocalOptions.FILE_NAME))).isEqualTo("rw-------");
    assertThat(mode(data)).isEqualTo("rwx------");
    assertThat(mode(existing.resolve("a"))).isEqualTo("rwx------");
    assertThat(mode(existing)).as("a directory that existed is left as it was").isEqualTo("rwxr-xr-x");
  }

  @Test
  void theModeOptionWidensANewStore() throws IOException {
    Path data = dir.resolve("shared/data");
    try (Tally t = Tally.open("file:" + data + "?mode=660")) {
      t.counters().incr("k");
    }
    assertThat(mode(data.resolve(LocalOptions.FILE_NAME))).isEqualTo("rw-rw----");
    assertThat(mode(data)).isEqualTo("rwxrwx---");
    Path file = dir.resolve("c.tally");
    try (Tally t = Tally.open("file:" + file + "?mode=644")) {
      t.counters().incr("k");
    }
    assertThat(mode(file)).isEqualTo("rw-r--r--");
    assertThatThrownBy(() -> LocalOptions.parse("file:x?mode=400")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("owner read and write");
    assertThatThrownBy(() -> LocalOptions.parse("file:x?mode=rw")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("octal");
  }

  @Test
  void twoInstancesInOneProcessShareTheFile() {
    Path data = dir.resolve("tally-data");
    Tally a = Tally.open("file:" + data);
    try (Tally b = Tally.open("file:" + dir + "/./tally-data")) {
      a.counters().incr("k", 2);
      assertThat(b.counters().incr("k", 3)).isEqualTo(5);
      a.close(); // the file stays open for b
      assertThat(b.counters().get("k")).hasValue(5);
    } finally {
      a.close();
    }
  }

  @Test
  void threadsOpeningAndClosingOneFileNeverOverlapItsLocks() throws Exception {
    // An open while the last instance closes must wait for it: two channels on one file in one
    // JVM would take the same file locks twice (OverlappingFileLockException).
    String uri = "file:" + dir.resolve("tally-data");
    int threads = 3;
    int rounds = 200;
    Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> all = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread thread = new Thread(() -> {
        try {
          go.await();
          for (int i = 0; i < rounds && errors.isEmpty(); i++) {
            try (Tally tally = Tally.open(uri)) {
              tally.counters().incr("k");
            }
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      });
      thread.start();
      all.add(thread);
    }
    go.countDown();
    for (Thread thread : all) {
      thread.join();
    }
    assertThat(errors).isEmpty();
    try (Tally tally = Tally.open(uri)) {
      assertThat(tally.counters().get("k")).hasValue(threads * rounds);
    }
  }

  // ---------------------------------------------------------------- URIs

  @Test
  void uriOptionsAreParsed() {
    LocalOptions o = LocalOptions.parse("file:" + dir + "/x?sync=always&slots=1024");
    assertThat(o.sync()).isEqualTo(LocalOptions.Sync.ALWAYS);
    assertThat(o.segment0Slots()).isEqualTo(1024);
    assertThat(o.file()).isEqualTo(dir.resolve("x").resolve(LocalOptions.FILE_NAME));
    assertThat(LocalOptions.parse("file:./tally-data").sync()).isEqualTo(LocalOptions.Sync.PERIODIC);
    assertThat(LocalOptions.parse("file:///tmp/a%20b/c.tally").file()).isEqualTo(Path.of("/tmp/a b/c.tally"));
    assertThat(LocalOptions.parse("file:" + dir + "/c.tally?sync=none").file()).isEqualTo(dir.resolve("c.tally"));
  }

  @Test
  void badUrisAreRefusedWithAnExample() {
    assertThatThrownBy(() -> LocalOptions.parse("file:")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("file:./tally-data");
    assertThatThrownBy(() -> LocalOptions.parse("file:x?sync=sometimes"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("periodic, always or none");
    assertThatThrownBy(() -> LocalOptions.parse("file:x?slots=100"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("power of two");
    assertThatThrownBy(() -> LocalOptions.parse("file:x?color=red"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown option 'color'")
        .hasMessageContaining("mode=<octal permissions>");
    assertThatThrownBy(() -> LocalOptions.parse("file://otherhost/x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("local to this host");
  }

  @Test
  void operationsAfterCloseFail() {
    Tally t = Tally.open("file:" + dir);
    t.close();
    t.close(); // idempotent
    assertThatThrownBy(() -> t.counters().incr("k")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }
}
