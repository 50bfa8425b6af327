package dev.tally.local;

import static dev.tally.local.Layout.COMMITTED;
import static dev.tally.local.Layout.ENTRIES;
import static dev.tally.local.Layout.ENTRIES_AT;
import static dev.tally.local.Layout.ENTRY_SIZE;
import static dev.tally.local.Layout.E_COUNT;
import static dev.tally.local.Layout.E_IMAGES;
import static dev.tally.local.Layout.E_OWNER;
import static dev.tally.local.Layout.E_PENDING;
import static dev.tally.local.Layout.E_STATE;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.S_EXPIRY;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_KEY_REF;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_RAW;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spi.Store;
import dev.tally.spi.TxOp;
import dev.tally.tck.ManualTimeSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a dead process leaves behind is recovered by the next process that meets it, fast, to a
 * state where its operation either happened entirely or not at all. The dead holder is faked
 * by writing its lock, journal entry and half-done change straight into the mapped file.
 */
class RecoveryTest {
  @TempDir
  Path dir;

  private final ManualTimeSource clock = new ManualTimeSource();
  private LocalStore store;
  private Process sleeper;

  private LocalStore open() {
    return new LocalStore(LocalOptions.parse("file:" + dir), clock);
  }

  @AfterEach
  void cleanUp() {
    if (store != null) {
      store.close();
    }
    if (sleeper != null) {
      sleeper.destroyForcibly();
    }
  }

  /** An owner word for a process that is not running: this pid with another start time. */
  private static long deadOwner() {
    long me = ProcessOwner.CURRENT.word;
    return ProcessOwner.word(ProcessOwner.pid(me), (int) (me >>> 32) + 1);
  }

  /** Opens the store with "from" at 100 and "to" at 0, as for a transfer; returns its map. */
  private FileMap openWithAccounts() {
    store = open();
    store.put("from", 100L, Store.NO_TTL);
    store.put("to", 0L, Store.NO_TTL);
    return store.file().map;
  }

  private long slotOf(String key) {
    return store.file().table.find(new Key(key)).slot();
  }

  /**
   * Writes what a holder that died mid-operation leaves: its journal entry with the slot's
   * image, its lock, and the slot sealed; returns the entry offset.
   */
  private long dieHolding(long owner, long slot, int entry) {
    FileMap m = store.file().map;
    long at = ENTRIES_AT + (long) entry * ENTRY_SIZE;
    m.setLongVolatile(at + E_OWNER, owner);
    m.setLongVolatile(at + E_PENDING, slot);
    m.setLongVolatile(slot + S_LOCK, owner);
    long img = at + E_IMAGES;
    for (int off = 8; off < SLOT; off += 8) {
      m.setLong(img + off, m.getLong(slot + off));
    }
    m.setLong(img, slot);
    long value = m.getLong(slot + S_RAW) ^ m.getLong(slot + S_MASK);
    m.setLong(img + S_HELD, value);
    m.setLong(slot + S_HELD, value);
    m.setIntVolatile(at + E_COUNT, 1);
    m.setLongVolatile(slot + S_RAW, SEALED);
    return at;
  }

  @Test
  void aHalfDoneChangeOfADeadHolderIsRolledBack() {
    store = open();
    store.put("k", 5L, Store.NO_TTL);
    long slot = slotOf("k");
    FileMap m = store.file().map;
    long entry = dieHolding(deadOwner(), slot, 7);
    m.setLong(slot + S_HELD, 99); // the put it was doing: value written, expiry not yet
    m.setLong(slot + S_EXPIRY, 123);

    long started = System.nanoTime();
    assertThat(store.incr("k", 1, 0, true)).isEqualTo(6);
    assertThat(System.nanoTime() - started).isLessThan(TimeUnit.MILLISECONDS.toNanos(500));
    assertThat(store.ttl("k")).isEqualTo(Store.TTL_PERMANENT);
    assertThat(m.getLongVolatile(entry + E_OWNER)).isZero();
    assertThat(m.getLongVolatile(slot + S_LOCK)).isZero();
  }

  @Test
  void aCounterRolledBackGetsANewMaskSoAnExpiryReadMidChangeIsNeverTrusted() {
    store = open();
    store.put("k", 5L, Store.NO_TTL);
    long slot = slotOf("k");
    FileMap m = store.file().map;
    long mask = m.getLong(slot + S_MASK);
    dieHolding(deadOwner(), slot, 7);
    m.setLong(slot + S_EXPIRY, 123); // the touch it was doing: expiry written, new mask not yet
    // A lookup in this instant pairs the old mask with the expiry the dead holder wrote...
    assertThat(store.file().table.find(new Key("k")).expiresAt()).isEqualTo(123);

    assertThat(store.incr("k", 1, 0, true)).isEqualTo(6); // ...and the rollback puts back "never"
    assertThat(store.ttl("k")).isEqualTo(Store.TTL_PERMANENT);
    // under a new mask, so no word of the old one, which that lookup could compare against, returns
    assertThat(m.getLong(slot + S_MASK)).isNotEqualTo(mask);
    assertThat(m.getLong(slot + S_RAW) ^ m.getLong(slot + S_MASK)).isEqualTo(6);
  }

  @Test
  void anIncrementCachedWithoutExpiryRestartsACounterAnotherInstanceMadeExpire() {
    store = open();
    LocalStore other = open(); // its own cache, as another process has
    try {
      assertThat(store.incr("k", 1, 0, true)).isEqualTo(1);
      assertThat(store.incr("k", 1, 0, true)).isEqualTo(2); // cached, with no expiry
      assertThat(other.touch("k", TimeUnit.SECONDS.toNanos(1))).isTrue(); // same value, new expiry
      clock.advanceNanos(TimeUnit.SECONDS.toNanos(2));
      assertThat(store.incr("k", 1, 0, true)).isEqualTo(1); // expired: it starts afresh
      assertThat(other.get("k")).isEqualTo(1L);
    } finally {
      other.close();
    }
  }

  @Test
  void aCommittedChangeOfADeadHolderIsRolledForward() {
    store = open();
    store.put("k", 5L, Store.NO_TTL);
    long slot = slotOf("k");
    FileMap m = store.file().map;
    long entry = dieHolding(deadOwner(), slot, 3);
    m.setLong(slot + S_HELD, 99);
    Table.writeMeta(m, slot, LIVE);
    m.setIntVolatile(entry + E_STATE, COMMITTED); // died after committing, before unsealing

    assertThat(store.get("k")).isEqualTo(99L);
    assertThat(store.incr("k", 1, 0, true)).isEqualTo(100);
    assertThat(m.getLongVolatile(entry + E_OWNER)).isZero();
  }

  @Test
  void aLockTakenButNotYetJournaledIsReleased() {
    store = open();
    store.put("k", 5L, Store.NO_TTL);
    long slot = slotOf("k");
    FileMap m = store.file().map;
    long at = ENTRIES_AT + 11L * ENTRY_SIZE;
    long dead = deadOwner();
    m.setLongVolatile(at + E_OWNER, dead);
    m.setLongVolatile(at + E_PENDING, slot);
    m.setLongVolatile(slot + S_LOCK, dead);

    assertThat(store.pop("k", true)).isEqualTo(5L);
    assertThat(store.get("k")).isNull();
    assertThat(m.getLongVolatile(at + E_OWNER)).isZero();
  }

  @Test
  void aTransactionCutShortIsUndoneOnEveryKey() {
    FileMap m = openWithAccounts();
    long dead = deadOwner();
    long from = slotOf("from");
    long to = slotOf("to");
    long entry = dieHolding(dead, from, 5);
    // second image in the same entry
    long img = entry + E_IMAGES + SLOT;
    m.setLongVolatile(to + S_LOCK, dead);
    for (int off = 8; off < SLOT; off += 8) {
      m.setLong(img + off, m.getLong(to + off));
    }
    m.setLong(img, to);
    long v = m.getLong(to + S_RAW) ^ m.getLong(to + S_MASK);
    m.setLong(img + S_HELD, v);
    m.setLong(to + S_HELD, v);
    m.setIntVolatile(entry + E_COUNT, 2);
    m.setLongVolatile(to + S_RAW, SEALED);
    m.setLong(from + S_HELD, 99); // moved one unit out of "from", died before "to"

    assertThat(store.transact(java.util.List.of(new dev.tally.spi.TxOp.Get("from"),
        new dev.tally.spi.TxOp.Get("to")))).containsExactly(100L, 0L);
  }

  /**
   * Lock words name a process, not a thread: once a committed operation unlocks its slots,
   * another thread of the process may lock and seal one of them before the first returns its
   * journal entry. If the process died then, an entry that still listed the slot would roll it
   * forward, unsealing the other thread's half-written value. So the images go before the locks.
   */
  @Test
  void anOperationUnlocksItsSlotsOnlyAfterItsEntryForgetsThem() {
    FileMap m = openWithAccounts();
    long me = ProcessOwner.CURRENT.word;
    List<Integer> imagesAtUnlock = new ArrayList<>();
    Table.unlockedHook = () -> {
      for (int i = 0; i < ENTRIES; i++) {
        long at = ENTRIES_AT + (long) i * ENTRY_SIZE;
        if (m.getLongVolatile(at + E_OWNER) == me) {
          imagesAtUnlock.add(m.getIntVolatile(at + E_COUNT));
        }
      }
    };
    try {
      store.put("from", 99L, Store.NO_TTL);
      store.transact(List.of(new TxOp.Incr("from", -1, 0, true), new TxOp.Incr("to", 1, 0, true)));
    } finally {
      Table.unlockedHook = null;
    }
    assertThat(imagesAtUnlock).as("images of the entry borrowed by each operation, once unlocked")
        .containsExactly(0, 0);
    assertThat(store.get("from")).isEqualTo(98L);
  }

  /**
   * With sync=always the entry was forced while it still listed its slots; after a machine crash
   * the device could hold that, and recovery on the next open would roll it forward over a later
   * operation of another thread. So the retired entry is forced too, before any slot is unlocked.
   */
  @Test
  void withSyncAlwaysTheEmptiedEntryReachesTheDeviceBeforeTheSlotsAreUnlocked() {
    store = new LocalStore(LocalOptions.parse("file:" + dir + "?sync=always"), clock);
    FileMap m = store.file().map;
    long me = ProcessOwner.CURRENT.word;
    long[] countWhenLastForced = {-1};
    List<Long> atUnlock = new ArrayList<>();
    FileMap.forceHook = (at, len) -> { // what the device gets of this thread's entry header
      for (int i = 0; i < ENTRIES; i++) {
        long e = ENTRIES_AT + (long) i * ENTRY_SIZE;
        if (m.getLongVolatile(e + E_OWNER) == me && at <= e + E_COUNT && e + E_COUNT < at + len) {
          countWhenLastForced[0] = m.getIntVolatile(e + E_COUNT);
        }
      }
    };
    Table.unlockedHook = () -> atUnlock.add(countWhenLastForced[0]);
    try {
      store.put("k", 1L, Store.NO_TTL);
      store.transact(List.of(new TxOp.Incr("k", 1, 0, true), new TxOp.Incr("other", 1, 0, true)));
    } finally {
      FileMap.forceHook = null;
      Table.unlockedHook = null;
    }
    assertThat(atUnlock).as("images listed by the entry as last forced, at each unlock").containsExactly(0L, 0L);
  }

  @Test
  void aSlotAnotherDeadThreadWaitedForIsUndoneByItsHoldersJournalOnly() {
    FileMap m = openWithAccounts();
    long dead = deadOwner();
    long from = slotOf("from");
    long to = slotOf("to");
    long holder = dieHolding(dead, from, 5); // one thread, mid-transaction...
    long img = holder + E_IMAGES + SLOT;
    m.setLongVolatile(to + S_LOCK, dead);
    for (int off = 8; off < SLOT; off += 8) {
      m.setLong(img + off, m.getLong(to + off));
    }
    m.setLong(img, to);
    long v = m.getLong(to + S_RAW) ^ m.getLong(to + S_MASK);
    m.setLong(img + S_HELD, v);
    m.setLong(to + S_HELD, v);
    m.setIntVolatile(holder + E_COUNT, 2);
    m.setLongVolatile(to + S_RAW, SEALED);
    m.setLong(from + S_HELD, 99);
    long waiter = ENTRIES_AT + 2L * ENTRY_SIZE; // ...another, of the same process, waiting for "from"
    m.setLongVolatile(waiter + E_OWNER, dead);
    m.setLongVolatile(waiter + E_PENDING, from);

    assertThat(store.transact(java.util.List.of(new dev.tally.spi.TxOp.Get("from"),
        new dev.tally.spi.TxOp.Get("to")))).containsExactly(100L, 0L);
    assertThat(m.getLongVolatile(waiter + E_OWNER)).isZero();
    assertThat(m.getLongVolatile(holder + E_OWNER)).isZero();
  }

  @Test
  void aLiveHolderIsWaitedForAndRecoveredWithinMillisecondsOfItsDeath() throws Exception {
    store = open();
    store.put("k", 5L, Store.NO_TTL);
    long slot = slotOf("k");
    sleeper = new ProcessBuilder("sleep", "30").start();
    String stat = Files.readString(Path.of("/proc", Long.toString(sleeper.pid()), "stat"));
    int token = (int) Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[19]);
    long owner = ProcessOwner.word(sleeper.pid(), token);
    assertThat(ProcessOwner.CURRENT.isDead(owner)).isFalse();
    dieHolding(owner, slot, 9);

    CompletableFuture<Long> incr = CompletableFuture.supplyAsync(() -> store.incr("k", 1, 0, true));
    Thread.sleep(300);
    assertThat(incr).isNotDone(); // its holder is alive: wait

    sleeper.destroyForcibly().waitFor();
    long killed = System.nanoTime();
    assertThat(incr.get(5, TimeUnit.SECONDS)).isEqualTo(6);
    assertThat(System.nanoTime() - killed).isLessThan(TimeUnit.MILLISECONDS.toNanos(1000));
    assertThat(ProcessOwner.CURRENT.isDead(owner)).isTrue();
  }

  @Test
  void aDeadStripeHolderDoesNotBlockInserts() {
    store = open();
    Key key = new Key("new-key");
    long stripe = Layout.STRIPES_AT + (key.hash >>> 52) * 8;
    store.file().map.setLongVolatile(stripe, deadOwner());
    assertThat(store.incr("new-key", 1, 0, true)).isEqualTo(1);
  }

  // ---------------------------------------------------------------- after an unclean shutdown

  private static void write(Path file, long at, long value) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, value), at);
    }
  }

  private static long read(Path file, long at) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      ch.read(b, at);
      return b.getLong(0);
    }
  }

  @Test
  void afterAMachineCrashTornSlotsAreDroppedAndTheRestKept() throws IOException {
    store = open();
    for (String k : new String[] {"good", "torn", "wrong-key", "mid-op"}) {
      store.put(k, 10L, Store.NO_TTL);
    }
    store.put("good", 1L, Store.NO_TTL);
    long torn = slotOf("torn");
    long wrongKey = slotOf("wrong-key");
    long midOp = slotOf("mid-op");
    FileMap m = store.file().map;
    long wrongKeyRecord = store.file().heapAddress((m.getInt(wrongKey + S_KEY_REF) & 0xFFFF_FFFFL) << 3);
    long midOpMask = m.getLong(midOp + S_MASK);
    store.close();
    store = null;

    Path file = dir.resolve(LocalOptions.FILE_NAME);
    write(file, Layout.H_CLEAN, 0); // as if the machine went down with the store open
    write(file, Layout.H_BOOT, 42);
    write(file, torn + S_EXPIRY, Long.MAX_VALUE / 2); // a field written without its checksum
    write(file, wrongKeyRecord + 8, read(file, wrongKeyRecord + 8) ^ 0xFF); // key page lost
    write(file, midOp + S_HELD, 10);
    write(file, midOp + S_RAW, SEALED); // sealed on disk: the value is in held
    assertThat(midOpMask).isNotZero();
    // The dump, read-only, shows what the next open will drop as torn, never as keys and values.
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (java.io.PrintStream out = new java.io.PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      LocalStoreInspector.dump(dir, out);
    }
    String dump = bytes.toString(StandardCharsets.UTF_8);
    assertThat(dump).contains("  counter  good = 1").contains("; 2 torn").doesNotContain("counter  torn")
        .doesNotContain("wrong-key").contains("fails its checksum").contains("is another key's");

    store = open();
    assertThat(store.file().recoveredOnOpen()).isTrue();
    assertThat(store.get("good")).isEqualTo(1L);
    assertThat(store.get("torn")).isNull();
    assertThat(store.get("wrong-key")).isNull();
    assertThat(store.get("mid-op")).isEqualTo(10L);
    assertThat(store.keys("")).containsExactlyInAnyOrder("good", "mid-op");
    assertThat(store.incr("torn", 1, 0, true)).isEqualTo(1);
  }

  @Test
  void afterAMachineCrashAKeyFoundTwiceIsKeptOnce() throws IOException {
    store = open();
    store.put("twice", 3L, Store.NO_TTL);
    long slot = slotOf("twice");
    FileMap m = store.file().map;
    // a copy in another free slot of the same page, fingerprint and all
    long copy = (slot & -Layout.PAGE) + (slot % Layout.PAGE == 63 * SLOT ? SLOT : slot % Layout.PAGE + SLOT);
    byte[] bytes = new byte[SLOT];
    m.getBytes(slot, bytes, 0, SLOT);
    m.putBytes(copy, bytes, 0, SLOT);
    m.setByteVolatile(Table.fingerprintAt(copy), Table.fingerprint(new Key("twice").hash));
    store.close();
    store = null;
    Path file = dir.resolve(LocalOptions.FILE_NAME);
    write(file, Layout.H_CLEAN, 0);
    write(file, Layout.H_BOOT, 42);

    store = open();
    assertThat(store.keys("")).containsExactly("twice");
    assertThat(store.get("twice")).isEqualTo(3L);
    assertThat(store.delete("twice")).isTrue();
    assertThat(store.get("twice")).isNull();
  }

  @Test
  void afterAllProcessesWereKilledTheNextOpenerRecoversTheirLocks() throws IOException {
    store = open();
    store.put("k", 5L, Store.NO_TTL);
    long slot = slotOf("k");
    dieHolding(deadOwner(), slot, 1);
    store.file().map.setLong(slot + S_HELD, 77);
    store.close();
    store = null;
    write(dir.resolve(LocalOptions.FILE_NAME), Layout.H_CLEAN, 0);

    store = open();
    assertThat(store.file().recoveredOnOpen()).isTrue();
    assertThat(store.file().map.getLongVolatile(slot + S_LOCK)).isZero();
    assertThat(store.get("k")).isEqualTo(5L);
  }

  @Test
  void keysOfAStoreReadBackAsWritten() {
    store = open();
    String euro = "€".repeat(300);
    store.put(euro, 1L, Store.NO_TTL);
    assertThat(store.keys("€€")).containsExactly(euro);
    assertThat(new String(euro.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8)).isEqualTo(euro);
  }
}
