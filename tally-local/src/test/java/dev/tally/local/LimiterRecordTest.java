package dev.tally.local;

import static dev.tally.local.Layout.COMMITTED;
import static dev.tally.local.Layout.ENTRIES_AT;
import static dev.tally.local.Layout.ENTRY_SIZE;
import static dev.tally.local.Layout.E_COUNT;
import static dev.tally.local.Layout.E_IMAGES;
import static dev.tally.local.Layout.E_OWNER;
import static dev.tally.local.Layout.E_PENDING;
import static dev.tally.local.Layout.E_STATE;
import static dev.tally.local.Layout.LIVE;
import static dev.tally.local.Layout.RECORD;
import static dev.tally.local.Layout.SEALED;
import static dev.tally.local.Layout.SLOT;
import static dev.tally.local.Layout.S_HELD;
import static dev.tally.local.Layout.S_LOCK;
import static dev.tally.local.Layout.S_MASK;
import static dev.tally.local.Layout.S_META;
import static dev.tally.local.Layout.S_RAW;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TallyException;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import dev.tally.tck.ManualTimeSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Rate limiters' state records in the file: kept apart from counters, copy-on-write, expired
 * and swept, decided at a time that never moves back, and all-or-nothing when their writer dies.
 * The conformance kit checks the limiters' answers; this checks what the file does with them.
 */
class LimiterRecordTest {
  @TempDir
  Path dir;

  private final ManualTimeSource clock = new ManualTimeSource();
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private Tally tally() {
    return tally(clock);
  }

  private Tally tally(ManualTimeSource time) {
    Tally t = Tally.builder("file:" + dir).timeSource(time).build();
    open.add(t);
    return t;
  }

  private LocalStore store(ManualTimeSource time) {
    LocalStore s = new LocalStore(LocalOptions.parse("file:" + dir), time);
    open.add(s);
    return s;
  }

  /** A limiter call whose machine the test writes: it sees the stored words and the time. */
  private static final class Scripted implements LimiterCall {
    final String key;
    final Function<long[], long[]> next;
    final long keep;
    long[] sawStored;
    long sawNow;

    Scripted(String key, long keep, Function<long[], long[]> next) {
      this.key = key;
      this.keep = keep;
      this.next = next;
    }

    @Override
    public String key() {
      return key;
    }

    @Override
    public List<Limit> limits() {
      return List.of();
    }

    @Override
    public LimiterOutcome apply(LimiterRecord record, long now, LimiterOperation operation, long permits) {
      long[] stored = record == null ? null : record.words();
      sawStored = stored == null ? null : stored.clone();
      sawNow = now;
      long[] r = next.apply(stored);
      return new LimiterOutcome(r, new Decision(true, 0, 1, 0, r == null ? 0 : keep), r == null ? 0 : keep, now);
    }
  }

  /** A record of {@code n} words, the first counting the calls that wrote it. */
  private static Function<long[], long[]> counting(int n) {
    return stored -> {
      long[] r = stored == null ? new long[n] : stored;
      r[0]++;
      return r;
    };
  }

  private static long slotOf(LocalStore s, String key) {
    Table.Ref ref = s.file().table.find(new Key(key));
    return ref == null ? 0 : ref.slot();
  }

  // ---------------------------------------------------------------- counters and limiters apart

  @Test
  void counterOperationsOnALimitersKeyAreRefusedWhateverTheFailurePolicy() {
    Tally t = tally();
    RateLimiter api = t.limiter("api", Limit.tokenBucket(10, Duration.ofMinutes(1)));
    assertThat(api.tryAcquire(3)).isTrue();
    Counters c = t.counters().withFailurePolicy(FailurePolicy.FAIL_OPEN);
    List<ThrowingCallable> ops = List.of(
        () -> c.incr("api"),
        () -> c.incr("api", 1.5),
        () -> c.incrExisting("api", 1),
        () -> c.get("api"),
        () -> c.getDouble("api"),
        () -> c.put("api", 1),
        () -> c.add("api", 1, Duration.ofMinutes(1)),
        () -> c.pop("api"),
        () -> c.delete("api"),
        () -> c.touch("api", Duration.ofMinutes(1)),
        () -> c.ttl("api"),
        () -> c.transaction(tx -> tx.incr("other").incr("api")));
    for (ThrowingCallable op : ops) {
      assertThatThrownBy(op)
          .isInstanceOf(TallyException.class)
          .isNotInstanceOf(StoreException.class)
          .hasMessageContaining("'api' holds a rate limiter's state, not a counter");
    }
    assertThat(c.get("other")).as("the transaction wrote nothing").isEmpty();
    assertThat(c.keys("")).as("keys lists counters only").isEmpty();
    assertThat(api.available()).as("the limiter is untouched").isEqualTo(7);
  }

  @Test
  void aLimiterOnACountersKeyIsRefused() {
    Tally t = tally();
    t.counters().incr("views", 5);
    RateLimiter views = t.limiter("views", Limit.fixedWindow(10, Duration.ofMinutes(1)))
        .withFailurePolicy(FailurePolicy.FAIL_OPEN);
    List<ThrowingCallable> ops = List.of(
        () -> views.tryAcquire(), () -> views.available(), () -> views.reset(), () -> views.refund(1));
    for (ThrowingCallable op : ops) {
      assertThatThrownBy(op)
          .isInstanceOf(TallyException.class)
          .isNotInstanceOf(StoreException.class)
          .hasMessageContaining("'views' holds a counter, not a rate limiter's state");
    }
    assertThat(t.counters().get("views")).hasValue(5);
  }

  @Test
  void anExpiredCounterMakesWayForALimiterAndAFullLimiterForACounter() {
    Tally t = tally();
    t.counters().put("k", 7, Duration.ofSeconds(1));
    clock.advance(Duration.ofSeconds(1));
    RateLimiter k = t.limiter("k", Limit.tokenBucket(2, Duration.ofSeconds(10)));
    assertThat(k.tryAcquire()).isTrue();
    assertThat(k.available()).isEqualTo(1);
    clock.advance(Duration.ofSeconds(5)); // full again: the record has expired
    assertThat(t.counters().incr("k")).isEqualTo(1);
    assertThat(t.counters().keys("")).containsExactly("k");
    assertThatThrownBy(k::tryAcquire).hasMessageContaining("holds a counter");
  }

  @Test
  void limitersKeepTheirStateAcrossReopening() {
    Tally t = tally();
    t.limiter("q", Limit.tokenBucket(10, Duration.ofHours(1))).tryAcquire(4);
    t.limiter("w", Limit.slidingWindow(5, Duration.ofHours(1)), Limit.tokenBucket(3, Duration.ofHours(1)))
        .tryAcquire(2);
    t.close();
    open.clear();
    Tally again = tally();
    assertThat(again.limiter("q", Limit.tokenBucket(99, Duration.ofSeconds(1))).available()).isEqualTo(6);
    assertThat(again.limiter("w", Limit.tokenBucket(99, Duration.ofSeconds(1))).available()).isEqualTo(1);
  }

  // ---------------------------------------------------------------- records

  @Test
  void everyUpdateWritesANewRecordAndFreesTheOldOne() {
    LocalStore s = store(clock);
    Scripted call = new Scripted("bucket", TimeUnit.HOURS.toNanos(1), counting(6));
    s.limit(call, LimiterOperation.ACQUIRE, 1);
    long slot = slotOf(s, "bucket");
    FileMap m = s.file().map;
    long meta = m.getLongVolatile(slot + S_META);
    assertThat(Table.state(meta)).isEqualTo(LIVE);
    assertThat(meta & RECORD).isEqualTo(RECORD);
    assertThat(m.getLongVolatile(slot + S_RAW)).as("a limiter's slot stays sealed").isEqualTo(SEALED);
    long first = m.getLong(slot + S_HELD);
    assertThat(m.getLong(slot + S_MASK)).isEqualTo(first ^ SEALED);

    long top = m.getLongVolatile(Layout.H_HEAP_TOP);
    for (int i = 2; i <= 10_000; i++) {
      s.limit(call, LimiterOperation.ACQUIRE, 1);
      assertThat(call.sawStored[0]).isEqualTo(i - 1);
    }
    assertThat(m.getLong(slot + S_HELD)).as("copy-on-write: another record").isNotEqualTo(first);
    assertThat(m.getLongVolatile(Layout.H_HEAP_TOP) - top)
        .as("10,000 updates reuse freed records").isLessThanOrEqualTo(96);
    KeyHeap.State state = s.file().heap.readRecord((int) m.getLong(slot + S_HELD), new Key("bucket").hash);
    assertThat(state.checked()).isTrue();
    assertThat(state.words()).hasSize(6).startsWith(10_000L);
    assertThat(state.lastNow()).isEqualTo(clock.nanos());
  }

  @Test
  void anUnchangedStateIsNotRewritten() {
    LocalStore s = store(clock);
    s.limit(new Scripted("b", 1_000, counting(6)), LimiterOperation.ACQUIRE, 1);
    long slot = slotOf(s, "b");
    long held = s.file().map.getLong(slot + S_HELD);
    s.limit(new Scripted("b", 1_000, stored -> stored), LimiterOperation.PEEK, 1);
    assertThat(s.file().map.getLong(slot + S_HELD)).isEqualTo(held);
  }

  @Test
  void aRecordHoldsUpToTwentyOneLimitsAndMoreAreRefused() {
    LocalStore s = store(clock);
    Scripted big = new Scripted("big", 1_000, counting(Layout.MAX_RECORD_WORDS));
    s.limit(big, LimiterOperation.ACQUIRE, 1);
    s.limit(big, LimiterOperation.ACQUIRE, 1);
    assertThat(big.sawStored).hasSize(126).startsWith(1L);
    assertThat(Layout.MAX_RECORD_WORDS / 6).isEqualTo(21);
    Scripted tooBig = new Scripted("too-big", 1_000, counting(Layout.MAX_RECORD_WORDS + 6));
    assertThatThrownBy(() -> s.limit(tooBig, LimiterOperation.ACQUIRE, 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 21 limits");
    assertThat(slotOf(s, "too-big")).as("nothing stored").isZero();
  }

  @Test
  void noStateLeftIsNoSlotAndAnExpiredRecordIsSwept() {
    LocalStore s = store(clock);
    Scripted call = new Scripted("x", TimeUnit.SECONDS.toNanos(10), counting(6));
    s.limit(new Scripted("x", 0, stored -> null), LimiterOperation.PEEK, 1);
    assertThat(slotOf(s, "x")).as("a peek at nothing creates nothing").isZero();
    s.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(slotOf(s, "x")).isNotZero();
    s.limit(new Scripted("x", 0, stored -> null), LimiterOperation.RESET, 0);
    assertThat(slotOf(s, "x")).as("a reset deletes the state").isZero();

    s.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(call.sawStored).as("after the reset: no state").isNull();
    clock.advance(Duration.ofSeconds(10));
    s.limit(call, LimiterOperation.PEEK, 1);
    assertThat(call.sawStored).as("expired: as good as no state").isNull();
    clock.advance(Duration.ofSeconds(10));
    assertThat(s.sweepAll()).isEqualTo(1);
    assertThat(slotOf(s, "x")).isZero();
  }

  // ---------------------------------------------------------------- time

  @Test
  void aLimiterFullAgainLeavesATombstoneThatKeepsItsLastInstantForADay() {
    LocalStore s = store(clock);
    Scripted call = new Scripted("f", TimeUnit.SECONDS.toNanos(10), counting(6));
    s.limit(call, LimiterOperation.ACQUIRE, 1);
    clock.advance(Duration.ofSeconds(1));
    long fullAt = clock.nanos();
    s.limit(new Scripted("f", 0, stored -> null), LimiterOperation.ACQUIRE, 1); // full again
    assertThat(slotOf(s, "f")).as("a tombstone, not nothing").isNotZero();
    Scripted peek = new Scripted("f", 0, stored -> null);
    clock.advance(Duration.ofSeconds(-5)); // a clock set back
    s.limit(peek, LimiterOperation.PEEK, 1);
    assertThat(peek.sawStored).as("the tombstone holds no state").isNull();
    assertThat(peek.sawNow).as("but keeps the instant").isEqualTo(fullAt);
    clock.advance(Duration.ofSeconds(5));
    clock.advance(Duration.ofHours(23));
    assertThat(s.sweepAll()).as("kept for a day").isZero();
    clock.advance(Duration.ofHours(1));
    assertThat(s.sweepAll()).isEqualTo(1);
    assertThat(slotOf(s, "f")).isZero();
  }

  @Test
  void aProcessBehindDecidesInTheWindowTheOtherHasReachedEvenAfterTheLimiterIsFullAgain() {
    Limit limit = Limit.fixedWindow(2, Duration.ofMinutes(1));
    ManualTimeSource ahead = new ManualTimeSource(java.time.Instant.parse("2026-11-08T00:01:00.100Z"));
    ManualTimeSource behind = new ManualTimeSource(java.time.Instant.parse("2026-11-08T00:00:59.900Z"));
    RateLimiter la = tally(ahead).limiter("lag", limit);
    Tally b = tally(behind);
    RateLimiter lb = b.limiter("lag", limit);
    assertThat(la.tryAcquire()).isTrue(); // the 00:01 window, count 1
    la.refund(1); // count 0: full again, no state to keep but the instant
    assertThat(lb.tryAcquire()).isTrue(); // decided at a's instant: the 00:01 window
    assertThat(lb.tryAcquire()).isTrue();
    assertThat(la.tryAcquire()).as("the 00:01 window already granted its 2").isFalse();
    la.reset();
    assertThat(b.counters().get("lag")).as("the name is no counter's").isEmpty();
  }

  @Test
  void aCounterMayTakeTheNameOfAFullLimitersTombstone() {
    Tally t = tally();
    RateLimiter l = t.limiter("name", Limit.tokenBucket(5, Duration.ofSeconds(1)));
    assertThat(l.tryAcquire()).isTrue();
    l.refund(1);
    assertThat(t.counters().get("name")).isEmpty();
    assertThat(t.counters().incr("name", 3)).isEqualTo(3);
    assertThat(t.counters().get("name")).hasValue(3);
  }


  @Test
  void aProcessWhoseClockIsBehindDecidesAtTheTimeTheStateWasWrittenAt() {
    ManualTimeSource behind = new ManualTimeSource();
    behind.advance(Duration.ofHours(-1));
    LocalStore ahead = store(clock);
    LocalStore late = store(behind);
    Scripted call = new Scripted("t", TimeUnit.HOURS.toNanos(2), counting(6));
    ahead.limit(call, LimiterOperation.ACQUIRE, 1);
    late.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(call.sawNow).as("never before the record's last now").isEqualTo(clock.nanos());
    behind.advance(Duration.ofHours(2));
    late.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(call.sawNow).isEqualTo(behind.nanos());
    ahead.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(call.sawNow).as("nor for the one that was ahead").isEqualTo(behind.nanos());

    // through the API: a bucket emptied at T is not refilled for a process an hour behind
    Tally a = tally(clock);
    Tally b = tally(behind);
    behind.set(java.time.Instant.ofEpochSecond(0, clock.nanos()).minus(Duration.ofHours(1)));
    assertThat(a.limiter("api", Limit.tokenBucket(10, Duration.ofSeconds(10))).tryAcquire(10)).isTrue();
    Decision d = b.limiter("api", Limit.tokenBucket(10, Duration.ofSeconds(10))).decide(1);
    assertThat(d.allowed()).isFalse();
    assertThat(d.retryAfter()).isEqualTo(Duration.ofSeconds(1));
  }

  // ---------------------------------------------------------------- dead writers

  private static long deadOwner() {
    long me = ProcessOwner.CURRENT.word;
    return ProcessOwner.word(ProcessOwner.pid(me), (int) (me >>> 32) + 1);
  }

  /**
   * Leaves {@code slot} as a writer that died mid-update leaves it: locked by a dead owner,
   * imaged in its journal entry, and pointing at a new record of {@code words}.
   */
  private static long dieMidUpdate(LocalStore s, long slot, String key, long[] words) {
    FileMap m = s.file().map;
    long owner = deadOwner();
    long at = ENTRIES_AT + 13L * ENTRY_SIZE;
    m.setLongVolatile(at + E_OWNER, owner);
    m.setLongVolatile(at + E_PENDING, slot);
    m.setLongVolatile(slot + S_LOCK, owner);
    long img = at + E_IMAGES;
    for (int off = 8; off < SLOT; off += 8) {
      m.setLong(img + off, m.getLong(slot + off));
    }
    m.setLong(img, slot);
    m.setIntVolatile(at + E_COUNT, 1);
    int ref = s.file().heap.allocateRecord(new Key(key).hash, 1, words);
    m.setLong(slot + S_HELD, ref);
    m.setLong(slot + S_MASK, ref ^ SEALED);
    Table.writeMeta(m, slot, LIVE | RECORD);
    return at;
  }

  @Test
  void aLimiterUpdateCutShortByDeathIsUndone() {
    LocalStore s = store(clock);
    Scripted call = new Scripted("b", TimeUnit.HOURS.toNanos(1), counting(6));
    s.limit(call, LimiterOperation.ACQUIRE, 1);
    long slot = slotOf(s, "b");
    long entry = dieMidUpdate(s, slot, "b", new long[] {99, 0, 0, 0, 0, 0});

    long started = System.nanoTime();
    s.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(System.nanoTime() - started).isLessThan(TimeUnit.MILLISECONDS.toNanos(500));
    assertThat(call.sawStored[0]).as("the old record is back").isEqualTo(1);
    assertThat(s.file().map.getLongVolatile(entry + E_OWNER)).isZero();
    assertThat(s.file().map.getLongVolatile(slot + S_LOCK)).isZero();
  }

  @Test
  void aLimiterUpdateCommittedBeforeDeathIsKept() {
    LocalStore s = store(clock);
    Scripted call = new Scripted("b", TimeUnit.HOURS.toNanos(1), counting(6));
    s.limit(call, LimiterOperation.ACQUIRE, 1);
    long slot = slotOf(s, "b");
    long entry = dieMidUpdate(s, slot, "b", new long[] {99, 0, 0, 0, 0, 0});
    s.file().map.setIntVolatile(entry + E_STATE, COMMITTED);

    s.limit(call, LimiterOperation.ACQUIRE, 1);
    assertThat(call.sawStored[0]).as("the new record stands").isEqualTo(99);
    assertThat(s.file().map.getLongVolatile(slot + S_RAW)).isEqualTo(SEALED);
  }

  @Test
  void afterAMachineCrashATornRecordIsDroppedAndTheOthersKept() throws IOException {
    LocalStore s = store(clock);
    Scripted good = new Scripted("good", TimeUnit.HOURS.toNanos(1), counting(6));
    Scripted torn = new Scripted("torn", TimeUnit.HOURS.toNanos(1), counting(6));
    s.limit(good, LimiterOperation.ACQUIRE, 1);
    s.limit(torn, LimiterOperation.ACQUIRE, 1);
    long tornSlot = slotOf(s, "torn");
    long record = s.file().heapAddress(s.file().map.getLong(tornSlot + S_HELD) << 3);
    s.close();
    open.clear();

    Path file = dir.resolve(LocalOptions.FILE_NAME);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
      ch.write(b.putLong(0, 0).clear(), Layout.H_CLEAN); // as if the machine went down
      ch.write(b.putLong(0, 42).clear(), Layout.H_BOOT);
      ch.write(b.putLong(0, 12345).clear(), record + Layout.R_WORDS); // the record's page lost
    }
    LocalStore again = store(clock);
    assertThat(again.file().recoveredOnOpen()).isTrue();
    again.limit(good, LimiterOperation.ACQUIRE, 1);
    assertThat(good.sawStored[0]).isEqualTo(1);
    again.limit(torn, LimiterOperation.ACQUIRE, 1);
    assertThat(torn.sawStored).as("dropped: the limiter is full again").isNull();
  }

  @Test
  void theLimiterOfAStoreThatIsClosedFails() {
    LocalStore s = store(clock);
    s.close();
    assertThatThrownBy(() -> s.limit(new Scripted("z", 1, counting(6)), LimiterOperation.ACQUIRE, 1))
        .isInstanceOf(IllegalStateException.class);
  }
}
