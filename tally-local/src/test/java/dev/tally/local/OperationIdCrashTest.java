package dev.tally.local;

import static dev.tally.local.Worker.F_ID_ACKED;
import static dev.tally.local.Worker.F_ID_HOLDING;
import static dev.tally.local.Worker.F_ID_LAST;
import static dev.tally.local.Worker.F_ID_REPLAY_WRONG;
import static dev.tally.local.Worker.F_ID_STARTED;
import static dev.tally.local.Worker.at;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.Tally;
import dev.tally.tck.ChildJvm;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kill -9} at random instants while processes send idempotent increments, then every id
 * retried by a survivor: the counter ends at the number of distinct ids, exactly.
 *
 * <p>Three writer processes (two threads each) run {@link Worker}'s "ids" mode on one store: each
 * call carries a fresh id, and every third call also repeats the last acknowledged id, whose
 * answer must not change. One writer plain, one that now and then sleeps between writing the
 * counter's slot and the id's (mid-commit), one that now and then sleeps holding both locks
 * before writing either. Each trial kills one writer, at a random instant or in its sleep, and
 * starts a replacement. This process keeps the store open from start to end, so no kill is
 * repaired by a first open: dead holders are recovered by whoever meets their locks.
 *
 * <p>At the end the last writers are killed and this process retries every id any writer
 * started, some of them held locked by a dead process. An id whose call was cut short either
 * applied with its record or not at all: so the retries apply exactly the missing ones, the
 * counter equals the number of distinct ids, and the retry of each writer thread's last
 * acknowledged id returns what that writer was told.
 */
class OperationIdCrashTest {
  private static final int TRIALS = 12;
  private static final int THREADS = 2;
  private static final String[] HOOKS = {"none", "tx", "lock"};

  @TempDir
  Path dir;

  private final List<Writer> everyWriter = new ArrayList<>();

  private final class Writer {
    final ChildJvm child;
    final MappedByteBuffer report;

    Writer(String hook) throws Exception {
      Path report = dir.resolve("report-" + everyWriter.size());
      this.report = Worker.mapReport(report, THREADS);
      this.child = ChildJvm.start(Worker.class, "ids", dir.resolve("tally-data").toString(),
          dir.resolve("go").toString(), Integer.toString(THREADS), report.toString(), hook);
      everyWriter.add(this);
    }

    long get(int thread, int field) {
      return report.getLong(at(thread, field));
    }

    boolean running() {
      return get(0, F_ID_ACKED) > 0 && get(1, F_ID_ACKED) > 0;
    }

    boolean holding() {
      return get(0, F_ID_HOLDING) == 1 || get(1, F_ID_HOLDING) == 1;
    }
  }

  private static boolean waitFor(long millis, java.util.function.BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(2);
    }
    return condition.getAsBoolean();
  }

  @Test
  void idsRetriedAfterKillsCountEachIncrementOnce() throws Exception {
    Path data = dir.resolve("tally-data");
    java.nio.file.Files.createFile(dir.resolve("go"));
    try (Tally survivor = Tally.open("file:" + data)) {
      Counters c = survivor.counters();
      int caughtInHook = 0;
      try {
        Writer[] live = new Writer[HOOKS.length];
        for (int i = 0; i < live.length; i++) {
          live[i] = new Writer(HOOKS[i]);
        }
        for (int trial = 0; trial < TRIALS; trial++) {
          int index = trial % HOOKS.length;
          Writer victim = live[index];
          assertThat(waitFor(60_000, victim::running)).as("writer of trial %d started", trial).isTrue();
          if (index == 0) {
            Thread.sleep(ThreadLocalRandom.current().nextInt(5, 300));
          } else if (waitFor(3_000, victim::holding)) {
            caughtInHook++;
          }
          victim.child.kill();
          live[index] = new Writer(HOOKS[index]);
        }
        for (Writer w : live) {
          assertThat(waitFor(60_000, w::running)).as("a last writer started").isTrue();
        }
        Thread.sleep(1_000); // a stretch of work before the last kills
      } finally {
        for (Writer w : everyWriter) {
          w.child.close(); // the last writers are killed too, at whatever they were doing
        }
      }
      assertThat(caughtInHook).as("kills of a writer sleeping mid-commit or holding locks")
          .isGreaterThanOrEqualTo(TRIALS * 2 / HOOKS.length - 2);

      long distinct = 0;
      long acknowledged = 0;
      long cutShort = 0;
      for (Writer w : everyWriter) {
        long pid = w.child.process().pid();
        for (int t = 0; t < THREADS; t++) {
          long started = w.get(t, F_ID_STARTED);
          long acked = w.get(t, F_ID_ACKED);
          assertThat(w.get(t, F_ID_REPLAY_WRONG)).as("replays that answered otherwise").isZero();
          distinct += started;
          acknowledged += acked;
          cutShort += started - acked;
          for (long n = 0; n < started; n++) {
            c.withOperationId(Worker.crashId(pid, t, n)).incr("idem");
          }
          if (acked > 0) {
            assertThat(c.withOperationId(Worker.crashId(pid, t, acked - 1)).incr("idem"))
                .as("the retry of the last id writer %d thread %d was answered", pid, t)
                .isEqualTo(w.get(t, F_ID_LAST));
          }
        }
      }
      System.out.printf("operation id crash test: %d writers killed, %d in a hook; %d distinct ids,"
          + " %d acknowledged, %d cut short by a kill%n", everyWriter.size(), caughtInHook, distinct,
          acknowledged, cutShort);
      assertThat(cutShort).as("calls a kill cut short").isPositive();
      assertThat(acknowledged).as("ids acknowledged").isGreaterThan(1_000);
      assertThat(c.get("idem")).as("the counter after every id was retried").hasValue(distinct);
    }
  }
}
