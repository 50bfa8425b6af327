package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import dev.tally.tck.ManualTimeSource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the file store does with operation ids beyond the conformance kit: where they live,
 * recovery, expiry and the sweeper, the inspector, and the store's own limits.
 */
class OperationIdTest {
  private static final long RETENTION = Duration.ofSeconds(10).toNanos();

  @TempDir
  Path dir;

  private final ManualTimeSource clock = new ManualTimeSource();
  private LocalStore store;

  private LocalStore open() {
    return store = new LocalStore(LocalOptions.parse("file:" + dir), clock, RETENTION);
  }

  @AfterEach
  void close() {
    if (store != null) {
      store.close();
    }
  }

  private static OperationId id(String s) {
    return OperationId.of(s);
  }

  private static Mutation incr(String key, long delta) {
    return new Mutation.Incr(key, delta, 0, true);
  }

  private static void write(Path file, long at, long value) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, value), at);
    }
  }

  private static String capture(java.util.function.Consumer<PrintStream> body) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      body.accept(out);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  @Test
  void anIdIsAKeyNoNameCanBe() {
    open();
    Key idKey = OperationIds.key(id("x"));
    assertThat(idKey.bytes[0]).isEqualTo((byte) 0xFF);
    store.put("\uFFFDx", 7L, Store.NO_TTL); // what the id's key reads as, decoded as UTF-8
    assertThat(store.applyOnce(id("x"), incr("\uFFFDx", 1))).isEqualTo(8L);
    assertThat(store.applyOnce(id("x"), incr("\uFFFDx", 1))).isEqualTo(8L);
    assertThat(store.keys("")).as("ids are not listed as counters").containsExactly("\uFFFDx");
    assertThat(store.file().table.find(idKey)).isNotNull();
  }

  @Test
  void idsSurviveAReopenAndTheRecoveryAfterAMachineCrash() throws IOException {
    open();
    assertThat(store.applyOnce(id("a"), incr("k", 5))).isEqualTo(5L);
    store.close();
    open();
    assertThat(store.applyOnce(id("a"), incr("k", 5))).as("after a clean reopen").isEqualTo(5L);
    store.close();
    store = null;
    Path file = dir.resolve(LocalOptions.FILE_NAME);
    write(file, Layout.H_CLEAN, 0); // as if the machine went down with the store open:
    write(file, Layout.H_BOOT, 42); // the first opener verifies every slot, ids' included
    open();
    assertThat(store.file().recoveredOnOpen()).isTrue();
    assertThat(store.applyOnce(id("a"), incr("k", 5))).as("after a machine crash").isEqualTo(5L);
    assertThat(store.get("k")).isEqualTo(5L);
  }

  @Test
  void expiredIdsAreForgottenSweptAndTheirSpaceReused() {
    open();
    for (int i = 0; i < 200; i++) {
      store.applyOnce(id("e" + i), incr("k", 1));
    }
    long top = store.file().map.getLongVolatile(Layout.H_HEAP_TOP);
    clock.advance(Duration.ofNanos(RETENTION - 1));
    assertThat(store.applyOnce(id("e0"), incr("k", 1))).as("inside the window").isEqualTo(1L);
    assertThat(store.sweepAll()).as("nothing has expired yet").isZero();
    clock.advance(Duration.ofNanos(1));
    assertThat(store.sweepAll()).as("every id swept").isEqualTo(200);
    assertThat(store.file().table.find(OperationIds.key(id("e7")))).isNull();
    for (int i = 0; i < 200; i++) {
      store.applyOnce(id("f" + i), incr("k", 1));
    }
    assertThat(store.get("k")).isEqualTo(400L);
    assertThat(store.file().map.getLongVolatile(Layout.H_HEAP_TOP))
        .as("new ids reuse the swept ids' key and state records").isEqualTo(top);
    assertThat(store.applyOnce(id("e0"), incr("k", 1))).as("an expired id applies again").isEqualTo(401L);
  }

  @Test
  void theInspectorListsIdsAndVerifyAcceptsThem() {
    clock.set(java.time.Instant.now()); // the inspector judges expiry by the wall clock
    open();
    store.applyOnce(id("req-1"), incr("views", 3));
    store.applyOnce(id("req-2"), new Mutation.Transact(List.of(new TxOp.Incr("a", 1, 0, true), new TxOp.Get("a"))));
    String dump = capture(out -> LocalStoreInspector.dump(dir, out));
    assertThat(dump).contains("2 live counter(s), 0 live limiter(s), 0 expired").contains("; 2 live operation id(s)")
        .containsPattern("op id    req-1 = [0-9a-f]{16}\\|L3; recorded at .*\\(forgotten in [0-9.]+ s\\)")
        .containsPattern("op id    req-2 = [0-9a-f]{16}\\|\\[L1,L1\\]");
    assertThat(capture(out -> assertThat(LocalStoreInspector.verify(dir, out)).isTrue())).contains("OK");
  }

  @Test
  void aTransactionWithAnIdHasOneKeyFewer() {
    open();
    List<TxOp> ops = new ArrayList<>();
    for (int i = 0; i < Layout.ENTRY_IMAGES; i++) {
      ops.add(new TxOp.Incr("t" + i, 1, 0, true));
    }
    assertThatThrownBy(() -> store.applyOnce(id("big"), new Mutation.Transact(ops)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most " + (Layout.ENTRY_IMAGES - 1) + " distinct keys when it carries an operation id");
    assertThat(store.keys("")).isEmpty();
    assertThat(store.applyOnce(id("big"), new Mutation.Transact(ops.subList(1, ops.size()))))
        .as("nothing was recorded for the refused call").isInstanceOf(Number[].class);
    assertThat(store.keys("")).hasSize(Layout.ENTRY_IMAGES - 1);
  }

  @Test
  void aResultTooLongToRecordIsRefusedAndAppliesNothing() {
    open();
    List<TxOp> ops = new ArrayList<>();
    for (int i = 0; i < 60; i++) { // 60 results of 21 characters: more than a record holds
      ops.add(new TxOp.Put("p" + i, Long.MIN_VALUE, Store.NO_TTL));
    }
    assertThatThrownBy(() -> store.applyOnce(id("long"), new Mutation.Transact(ops)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("records at most " + OperationIds.MAX_TEXT)
        .hasMessageContaining("nothing was applied");
    assertThat(store.keys("")).isEmpty();
    assertThat(store.file().table.find(OperationIds.key(id("long")))).isNull();
    List<TxOp> shorter = ops.subList(0, 37);
    assertThat((Number[]) store.applyOnce(id("long"), new Mutation.Transact(shorter))).hasSize(37);
    assertThat(store.keys("")).hasSize(37);
  }

  @Test
  void recordTextsRoundTrip() {
    for (String text : new String[] {"", "0123456789abcdef|N", "0123456789abcdef|L-9223372036854775808",
        "x".repeat(OperationIds.MAX_TEXT)}) {
      long[] words = OperationIds.words(text, incr("k", 1));
      assertThat(OperationIds.text(words)).isEqualTo(text);
    }
    assertThat(OperationIds.text(new long[] {1, 2, 3})).as("a limiter's words").isNull();
  }
}
