package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tally.Counters;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.tck.RedisServerProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The exactly-once flush under {@code kill -9}: writer threads increment eight keys throughout,
 * counting every increment the store acknowledged; a flusher in another process is killed again
 * and again, inside each step of the protocol (it pauses after announcing a step, and is killed
 * in the pause) and at random instants, and a new one is started each time. At the end a last
 * flusher finishes what is left, and for every key the database's total plus what is still
 * pending on the source equals the acknowledged increments, exactly.
 *
 * <p>And the database under the flusher crashing ({@code SIGKILL} of every PostgreSQL process)
 * while it commits asynchronously ({@code synchronous_commit=off}, its WAL writer slowed so that
 * an asynchronous commit stays unwritten): the flush's own commits must survive it.
 */
class FlushCrashTest {
  private static final PostgresServer SERVER = PostgresServer.shared();
  private static final int KEYS = 8;
  private static final String[] STEPS = {"recorded", "popped", "applying", "applied", "random"};
  private static RedisServerProcess redis;

  static Stream<String> sources() {
    return Stream.of("file", "redis", "postgresql");
  }

  @AfterAll
  static void stopRedis() {
    if (redis != null) {
      redis.close();
    }
  }

  private static String sourceUri(String kind) throws IOException {
    switch (kind) {
      case "file":
        return "file:" + Files.createTempDirectory("tally-flush-crash").resolve("data");
      case "redis":
        if (redis == null) {
          redis = RedisServerProcess.start();
        }
        return redis.uri() + "?timeout=10s";
      default:
        return SERVER.uri("timeout=30s");
    }
  }

  @ParameterizedTest(name = "{0} as the source")
  @MethodSource("sources")
  void aFlusherKilledAtAnyInstantLosesNothingAndAppliesNothingTwice(String kind) throws Exception {
    String uri = sourceUri(kind);
    String prefix = "views:" + kind + ":" + Long.toHexString(System.nanoTime()) + ":";
    String table = "episodes_" + kind;
    String ledger = "flush_" + kind;
    SERVER.execute("DROP TABLE IF EXISTS " + table + ", " + ledger);
    SERVER.execute("CREATE TABLE " + table + " (id int PRIMARY KEY, views bigint NOT NULL DEFAULT 0)");
    SERVER.execute("INSERT INTO " + table + " (id) SELECT generate_series(1, " + KEYS + ")");
    SERVER.execute(PostgresSchema.ledgerDdl(ledger));
    String sql = "UPDATE " + table + " SET views = views + :count WHERE id = :suffix::int";

    try (Tally tally = Tally.open(uri)) {
      assumeTrue(supportsOperationIds(tally),
          () -> kind + " does not implement operation ids (Store.applyOnce) in this build: the flush cannot run on it");
      Counters counters = tally.counters();
      AtomicLongArray acknowledged = new AtomicLongArray(KEYS + 1);
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> writers = new ArrayList<>();
      for (int w = 0; w < 4; w++) {
        Thread t = new Thread(() -> {
          ThreadLocalRandom rnd = ThreadLocalRandom.current();
          long n = 0;
          while (!stop.get()) {
            int id = 1 + rnd.nextInt(KEYS);
            long delta = 1 + rnd.nextInt(3);
            // With an id, a call whose answer was lost (a timeout on a loaded machine) is retried
            // until it answers, and counts once: every acknowledged increment is known exactly.
            Counters once = counters.withOperationId(Thread.currentThread().getName() + "-" + n++);
            for (int attempt = 0; ; attempt++) {
              try {
                once.incr(prefix + id, delta);
                break;
              } catch (StoreException e) {
                if (attempt > 100) {
                  throw e;
                }
              }
            }
            acknowledged.addAndGet(id, delta); // only once the store has answered
          }
        }, "writer-" + w + "-" + Long.toHexString(System.nanoTime()));
        t.start();
        writers.add(t);
      }

      SplittableRandom rnd = new SplittableRandom(20261201L);
      int trials = 25;
      List<String> killedIn = new ArrayList<>();
      for (int trial = 0; trial < trials; trial++) {
        String step = STEPS[trial % STEPS.length];
        Process child = startFlusher(uri, prefix, sql, ledger, step.equals("random") ? "none" : step);
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
          awaitLine(lines, "READY", child);
          if (step.equals("random")) {
            Thread.sleep(rnd.nextInt(50, 600));
          } else {
            awaitLine(lines, "STEP " + step, child); // it pauses there now
            Thread.sleep(rnd.nextInt(0, 50));
          }
          child.destroyForcibly(); // SIGKILL
          assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
          killedIn.add(step);
          if (step.equals("recorded") || step.equals("popped") || step.equals("applying")) {
            // Killed between the ledger's record and the commit: the batch is unfinished, for
            // the next flusher to finish by replaying its pops.
            assertThat(count("SELECT count(*) FROM " + ledger + " WHERE applied_at IS NULL"))
                .as("trial %d, killed in step %s: an unfinished batch", trial, step).isPositive();
          }
        }
      }

      stop.set(true);
      for (Thread t : writers) {
        t.join();
      }
      // A last flusher finishes the interrupted batches and moves part of what is left.
      try (Flush last = Flush.from(tally, prefix).into(SERVER.uri(""), sql).ledger(ledger).build()) {
        awaitLock(last);
      }
      long unfinished = count("SELECT count(*) FROM " + ledger + " WHERE applied_at IS NULL");
      assertThat(unfinished).as("unfinished batches after the last run").isZero();
      long moved = 0;
      for (int id = 1; id <= KEYS; id++) {
        long inDb = count("SELECT views FROM " + table + " WHERE id = " + id);
        long pending = counters.get(prefix + id).orElse(0);
        moved += inDb;
        assertThat(inDb + pending).as("key %d: database %d + pending %d", id, inDb, pending)
            .isEqualTo(acknowledged.get(id));
      }
      assertThat(moved).as("the flushers moved something").isPositive();
      assertThat(killedIn).hasSize(trials).contains(STEPS);
      assertThat(count("SELECT count(*) FROM " + ledger + " WHERE applied_at IS NOT NULL")).as("batches applied")
          .isPositive();
    }
  }

  /**
   * The target database crashes right after a step the flusher announces: after the ledger's
   * record committed (the pops then empty the source, and the apply fails), or after the apply
   * committed. Started again, it must still hold both commits, so that the next run replays the
   * batch or leaves it alone: every count arrives once.
   */
  @ParameterizedTest(name = "crashed after the step {0}")
  @ValueSource(strings = {"recorded", "applied"})
  void aDatabaseCrashWithAsynchronousCommitsLosesNoCountAndDoublesNone(String step) throws Exception {
    PostgresServer target = PostgresServer.start();
    try {
      target.execute("ALTER SYSTEM SET wal_writer_delay = '10s'");
      target.execute("SELECT pg_reload_conf()");
      Thread.sleep(500); // the WAL writer reads the setting when its current 200 ms nap ends
      assertThat(query(target, "SHOW synchronous_commit")).as("the target commits asynchronously").isEqualTo("off");
      target.execute("CREATE TABLE episodes (id int PRIMARY KEY, views bigint NOT NULL DEFAULT 0)");
      target.execute("INSERT INTO episodes (id) SELECT generate_series(1, " + KEYS + ")");
      target.execute(PostgresSchema.ledgerDdl("tally_flush"));
      target.execute("CHECKPOINT"); // the tables, committed asynchronously too, survive the crash
      String sql = "UPDATE episodes SET views = views + :count WHERE id = :suffix::int";
      String prefix = "crash:" + step + ":" + Long.toHexString(System.nanoTime()) + ":";
      try (Tally source = Tally.open(SERVER.uri("timeout=30s"))) {
        for (int id = 1; id <= KEYS; id++) {
          source.counters().incr(prefix + id, 625); // 5,000 in all, the reported reproduction
        }
        AtomicBoolean crashed = new AtomicBoolean();
        Flush.Listener crashAfter = new Flush.Listener() {
          @Override
          public void recorded(String batch, List<String> keys) {
            crashAt("recorded");
          }

          @Override
          public void applied(String batch, long total) {
            crashAt("applied");
          }

          private void crashAt(String now) {
            if (now.equals(step) && crashed.compareAndSet(false, true)) {
              target.crash();
            }
          }
        };
        try (Flush first = Flush.from(source, prefix).into(target.uri("timeout=5s"), sql).listener(crashAfter).build()) {
          if (step.equals("recorded")) {
            assertThatThrownBy(first::run).as("the apply, with the database down").isInstanceOf(StoreException.class);
          } else {
            first.run(); // the crash came after the commit: this run is over
          }
        }
        assertThat(crashed).isTrue();
        target.restart();
        try (Flush next = Flush.from(source, prefix).into(target.uri("timeout=5s"), sql).build()) {
          next.run();
        }
        long moved = 0;
        long lost = 0;
        long doubled = 0;
        for (int id = 1; id <= KEYS; id++) {
          long inDb = Long.parseLong(query(target, "SELECT views FROM episodes WHERE id = " + id));
          long pending = source.counters().get(prefix + id).orElse(0);
          moved += inDb;
          lost += Math.max(0, 625 - inDb - pending);
          doubled += Math.max(0, inDb + pending - 625);
        }
        String unfinished = query(target, "SELECT count(*) FROM tally_flush WHERE applied_at IS NULL");
        System.out.println("FlushCrashTest crashed after " + step + ": of 5000 counts, " + moved + " in the database, "
            + lost + " lost, " + doubled + " doubled; " + unfinished + " batches unfinished");
        assertThat(lost).as("counts lost").isZero();
        assertThat(doubled).as("counts applied twice").isZero();
        assertThat(moved).as("everything moved after the restart").isEqualTo(5_000);
      }
    } finally {
      target.stop();
    }
  }

  private static String query(PostgresServer server, String sql) throws SQLException {
    try (Connection c = server.connect(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getString(1);
    }
  }

  /** Runs {@code flush} once, waiting out a killed flusher's lock until the server has seen it die. */
  private static void awaitLock(Flush flush) throws InterruptedException {
    for (int i = 0; ; i++) {
      try {
        flush.run();
        return;
      } catch (FlushBusyException e) {
        if (i > 500) {
          throw e;
        }
        Thread.sleep(20);
      }
    }
  }

  private static boolean supportsOperationIds(Tally tally) {
    try {
      tally.counters().withOperationId("probe-" + System.nanoTime()).delete("probe-" + System.nanoTime());
      return true;
    } catch (UnsupportedOperationException e) {
      return false;
    }
  }

  private static Process startFlusher(String source, String prefix, String sql, String ledger, String pauseAt)
      throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    return new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "-Xmx128m",
        FlushChild.class.getName(), source, prefix, SERVER.uri("timeout=30s"), sql, ledger, pauseAt)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  private static void awaitLine(BufferedReader lines, String wanted, Process child) throws IOException {
    String line;
    while ((line = lines.readLine()) != null) {
      if (line.equals(wanted)) {
        return;
      }
    }
    throw new IllegalStateException("the flusher exited (" + (child.isAlive() ? "alive" : child.exitValue())
        + ") before printing " + wanted);
  }

  private static long count(String query) throws SQLException {
    return Long.parseLong(query(SERVER, query));
  }
}
