package dev.tally.local;

import static dev.tally.local.Layout.S_EXPIRY;
import static dev.tally.local.Layout.S_HELD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Limit;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.tck.ManualTimeSource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The read-only dump and verification of a store file. */
class InspectorTest {
  @TempDir
  Path dir;

  private final ManualTimeSource clock = new ManualTimeSource();

  private Tally open() {
    return Tally.builder("file:" + dir).timeSource(clock).build();
  }

  private static String capture(Consumer<PrintStream> printer) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      printer.accept(out);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  private Path file() {
    return dir.resolve(LocalOptions.FILE_NAME);
  }

  private void populate(Tally t) {
    t.counters().incr("views:episode:512", 42);
    t.counters().incr("ratio", 1.5);
    t.counters().put("session", 7, Duration.ofSeconds(30));
    t.counters().put("gone", 1, Duration.ofSeconds(1));
    t.counters().put("deleted", 1);
    t.counters().delete("deleted");
    t.limiter("api:user:42", Limit.tokenBucket(100, Duration.ofMinutes(1))).tryAcquire(3);
  }

  @Test
  void dumpShowsTheGeometryTheCountsAndEveryKey() {
    try (Tally t = open()) {
      populate(t);
      long later = clock.nanos() + Duration.ofSeconds(1).toNanos(); // the store's clock stays put
      String dump = capture(out -> LocalStoreInspector.dump(dir, out, 100, later));
      assertThat(dump)
          .contains("Tally store file " + file())
          .contains("version 1")
          .contains("not clean") // open now
          .contains("segments    1")
          .contains("segment 0 at 4,231,168: 16,128 slots")
          .contains("journal     0 entries in use")
          .contains("3 live counter(s)")
          .contains("1 live limiter(s), 1 expired, 1 tombstone(s), 0 reserved")
          .contains("  counter  views:episode:512 = 42\n")
          .contains("  counter  ratio = 1.5\n")
          .contains("  counter  session = 7  (expires in 29.000 s)")
          .contains("  counter  gone = 1  (expired 0.000 ms ago)")
          .contains("  limiter  api:user:42 = token_bucket [100, 600000000, ")
          .contains("decided at 2026-11-08T00:00:00Z  (full again in 800.000 ms)")
          .doesNotContain("deleted");
    }
    String closed = capture(out -> LocalStoreInspector.dump(file(), out));
    assertThat(closed).contains("shutdown    clean").contains("views:episode:512 = 42");
  }

  @Test
  void dumpListsAtMostTheKeysAskedFor() {
    try (Tally t = open()) {
      for (int i = 0; i < 50; i++) {
        t.counters().incr("k" + i);
      }
    }
    String dump = capture(out -> LocalStoreInspector.dump(dir, out, 10, clock.nanos()));
    assertThat(dump).contains("(the first 10 of 50)");
    assertThat(dump.lines().filter(l -> l.startsWith("  counter ")).count()).isEqualTo(10);
  }

  @Test
  void verifyPassesAHealthyStoreOpenOrClosed() {
    try (Tally t = open()) {
      populate(t);
      String open = capture(out -> assertThat(LocalStoreInspector.verify(dir, out)).isTrue());
      assertThat(open).contains(": OK (").contains("note: not closed cleanly");
    }
    String closed = capture(out -> assertThat(LocalStoreInspector.verify(file(), out)).isTrue());
    assertThat(closed).contains(": OK (").doesNotContain("note:").contains("5 live keys");
  }

  @Test
  void verifyGivesAConsistentAnswerOnAStoreInUse() throws Exception {
    // A small first segment, so the table and the key heap grow while verify reads them.
    String uri = "file:" + dir + "?slots=64";
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.Queue<Throwable> errors = new java.util.concurrent.ConcurrentLinkedQueue<>();
    java.util.concurrent.atomic.AtomicLong writes = new java.util.concurrent.atomic.AtomicLong();
    try (Tally t = Tally.builder(uri).timeSource(clock).build()) {
      List<Thread> writers = new ArrayList<>();
      for (int w = 0; w < 3; w++) {
        int id = w;
        Thread thread = new Thread(() -> {
          try {
            for (long i = 0; !stop.get(); i++) {
              String key = "w" + id + ":" + "k".repeat((int) (i % 40)) + i;
              t.counters().incr(key, 1);
              t.counters().put("p" + id + ":" + (i % 500), i, Duration.ofMinutes(1));
              if (i % 3 == 0) {
                t.counters().delete(key);
              }
              t.limiter("l" + id + ":" + (i % 200), Limit.tokenBucket(10, Duration.ofSeconds(1))).tryAcquire();
              long n = i;
              t.counters().transaction(tx -> tx.incr("tx:" + id, 1).delete("tx:" + id + ":" + (n % 7)));
              writes.incrementAndGet();
            }
          } catch (Throwable e) {
            errors.add(e);
          }
        });
        thread.start();
        writers.add(thread);
      }
      try {
        for (int round = 0; round < 12; round++) {
          // each round starts after the writers have moved on, so every verify meets live writes
          long target = writes.get() + 20;
          while (writes.get() < target && errors.isEmpty()) {
            Thread.onSpinWait();
          }
          String report = capture(out -> LocalStoreInspector.verify(dir, out));
          assertThat(report).as("round " + round + " after " + writes.get() + " writes")
              .doesNotContain("problem:").contains(": OK (");
        }
      } finally {
        stop.set(true);
        for (Thread thread : writers) {
          thread.join();
        }
      }
      assertThat(errors).isEmpty();
      assertThat(writes.get()).isGreaterThan(100);
      assertThat(capture(out -> assertThat(LocalStoreInspector.verify(dir, out)).isTrue())).contains(": OK (");
    }
  }

  private static void write(Path file, long at, long value) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, value), at);
    }
  }

  @Test
  void verifyReportsTornSlotsAndRecordsAndLeavesTheFileAsItWas() throws IOException {
    long tornSlot;
    long record;
    try (Tally t = open()) {
      populate(t);
      LocalStore s = new LocalStore(LocalOptions.parse("file:" + dir), clock);
      tornSlot = s.file().table.find(new Key("views:episode:512")).slot();
      long limiter = s.file().table.find(new Key("api:user:42")).slot();
      record = s.file().heapAddress(s.file().map.getLong(limiter + S_HELD) << 3);
      s.close();
    }
    write(file(), tornSlot + S_EXPIRY, 12345); // changed without its checksum
    write(file(), record + Layout.R_WORDS + 24, 1); // the limiter's state changed under its check word
    byte[] before = Files.readAllBytes(file());

    String report = capture(out -> assertThat(LocalStoreInspector.verify(dir, out)).isFalse());
    assertThat(report)
        .contains("problem: slot at " + tornSlot + ": it fails its checksum")
        .contains(": its rate limiter state record is unreadable or fails its check word")
        .contains("2 problem(s)");
    assertThat(Files.readAllBytes(file())).as("read-only").isEqualTo(before);
  }

  @Test
  void aFileThatIsNotAStoreIsReportedNotOpened() throws IOException {
    Path foreign = dir.resolve("notes.txt");
    Files.writeString(foreign, "hello, not a store");
    String report = capture(out -> assertThat(LocalStoreInspector.verify(foreign, out)).isFalse());
    assertThat(report).contains("problem: ").contains("is not a Tally store file");
    assertThatThrownBy(() -> LocalStoreInspector.dump(foreign, new PrintStream(new ByteArrayOutputStream())))
        .isInstanceOf(StoreException.class).hasMessageContaining("not a Tally store file");
    assertThatThrownBy(() -> LocalStoreInspector.dump(dir.resolve("missing.tally"),
        new PrintStream(new ByteArrayOutputStream()))).isInstanceOf(StoreException.class);
  }
}
