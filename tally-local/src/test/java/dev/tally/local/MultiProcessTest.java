package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.RateLimiter;
import dev.tally.ReservationGoneException;
import dev.tally.Tally;
import dev.tally.tck.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several JVMs on one store file: the races of the concurrency suite, and a rate limiter
 * drained by all of them, between processes. Each child runs two threads, starts when the "go"
 * file appears, and reports on stdout.
 */
class MultiProcessTest {
  private static final int CHILDREN = 4;
  private static final int THREADS = 2;
  private static final long START_MILLIS = 60_000;

  @TempDir
  Path dir;

  private Path data() {
    return dir.resolve("tally-data");
  }

  private List<ChildJvm> start(int n, String... args) throws InterruptedException {
    List<ChildJvm> children = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String[] a = args.clone();
      for (int j = 0; j < a.length; j++) {
        a[j] = a[j].replace("{i}", Integer.toString(i));
      }
      children.add(ChildJvm.start(Worker.class, a));
    }
    return children;
  }

  private static void awaitAll(List<ChildJvm> children, String prefix) throws InterruptedException {
    for (ChildJvm c : children) {
      c.await(prefix, START_MILLIS);
    }
  }

  private static void closeAll(List<ChildJvm> children) {
    for (ChildJvm c : children) {
      c.close();
    }
  }

  @Test
  void incrementsFromEveryProcessAndThreadAddUpExactly() throws Exception {
    int n = 20_000;
    int keys = 10;
    Path go = dir.resolve("go");
    List<ChildJvm> children = start(CHILDREN, "incr", data().toString(), go.toString(),
        Integer.toString(THREADS), Integer.toString(n), Integer.toString(keys));
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
    } finally {
      closeAll(children);
    }
    long total = (long) CHILDREN * THREADS * n;
    try (Tally t = Tally.open("file:" + data())) {
      Counters c = t.counters();
      assertThat(c.get("hot")).hasValue(total);
      for (int k = 0; k < keys; k++) {
        assertThat(c.get("k:" + k)).hasValue(2 * total / keys);
      }
    }
  }

  @Test
  void boundedDecrementsFromEveryProcessEndExactlyAtTheFloor() throws Exception {
    int n = 5_000;
    long attempts = (long) CHILDREN * THREADS * n;
    long start = 3 * (attempts / 2);
    try (Tally t = Tally.open("file:" + data())) {
      t.counters().put("quota", start);
    }
    Path go = dir.resolve("go");
    List<ChildJvm> children = start(CHILDREN, "floor", data().toString(), go.toString(),
        Integer.toString(THREADS), Integer.toString(n));
    long applied = 0;
    long refused = 0;
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
      for (ChildJvm c : children) {
        for (String line : c.linesStartingWith("APPLIED ")) {
          String[] f = line.split(" ");
          applied += Long.parseLong(f[1]);
          refused += Long.parseLong(f[3]);
        }
      }
    } finally {
      closeAll(children);
    }
    assertThat(applied).isEqualTo(start / 3);
    assertThat(refused).isEqualTo(attempts - start / 3);
    try (Tally t = Tally.open("file:" + data())) {
      assertThat(t.counters().get("quota")).hasValue(0);
    }
  }

  @Test
  void reservationsSettledInOtherProcessesChargeExactlyTheirActualCosts() throws Exception {
    Path go = dir.resolve("go");
    List<ChildJvm> children = start(CHILDREN, "reserve", data().toString(), go.toString(),
        Integer.toString(THREADS), "200");
    List<String> settled = new ArrayList<>();
    List<String> held = new ArrayList<>();
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
      for (ChildJvm c : children) {
        settled.addAll(c.linesStartingWith("SETTLED "));
        held.addAll(c.linesStartingWith("HELD "));
      }
    } finally {
      closeAll(children);
    }
    assertThat(settled).hasSize(CHILDREN * THREADS * 100);
    assertThat(held).hasSize(CHILDREN * THREADS * 100);
    long expected = 0;
    for (String line : settled) {
      expected += Long.parseLong(line.split(" ")[1]);
    }
    try (Tally t = Tally.open("file:" + data())) {
      RateLimiter l = Worker.reserved(t);
      int i = 0;
      for (String line : held) {
        String[] f = line.split(" ");
        long actual = i++ % 3 == 0 ? 0 : Long.parseLong(f[2]) + i % 7; // cancelled, or above
        l.reservation(f[1]).settle(actual);
        expected += actual;
        assertThatThrownBy(() -> l.reservation(f[1]).settle(actual + 1))
            .isInstanceOf(ReservationGoneException.class);
      }
      assertThat(1_000_000_000 - l.available()).isEqualTo(expected);
    }
  }

  @Test
  void exactlyOneAddWinsAcrossProcesses() throws Exception {
    int rounds = 300;
    Path go = dir.resolve("go");
    List<ChildJvm> children = start(CHILDREN, "add", data().toString(), go.toString(),
        Integer.toString(THREADS), Integer.toString(rounds), "{i}");
    Map<Integer, List<Long>> winners = new HashMap<>();
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
      for (ChildJvm c : children) {
        for (String line : c.linesStartingWith("WIN ")) {
          String[] f = line.split(" ");
          winners.computeIfAbsent(Integer.parseInt(f[1]), r -> new ArrayList<>()).add(Long.parseLong(f[2]));
        }
      }
    } finally {
      closeAll(children);
    }
    try (Tally t = Tally.open("file:" + data())) {
      for (int r = 0; r < rounds; r++) {
        assertThat(winners.get(r)).as("winners of round %d", r).hasSize(1);
        assertThat(t.counters().get("add:" + r)).hasValue(winners.get(r).get(0));
      }
    }
  }

  @Test
  void popRacingWithIncrementsFromOtherProcessesLosesNothing() throws Exception {
    int n = 50_000;
    int writers = CHILDREN - 1;
    Path go = dir.resolve("go");
    Path stop = dir.resolve("stop");
    List<ChildJvm> children = start(writers, "views", data().toString(), go.toString(),
        Integer.toString(THREADS), Integer.toString(n));
    ChildJvm popper = ChildJvm.start(Worker.class, "pop", data().toString(), go.toString(), stop.toString());
    long popped;
    try {
      awaitAll(children, "READY");
      popper.await("READY", START_MILLIS);
      Files.createFile(go);
      awaitAll(children, "DONE");
      Files.createFile(stop);
      popped = Long.parseLong(popper.await("POPPED ", START_MILLIS).substring(7));
      popper.await("DONE", START_MILLIS);
    } finally {
      closeAll(children);
      popper.close();
    }
    assertThat(popped).as("what the popper moved while the others counted").isPositive();
    try (Tally t = Tally.open("file:" + data())) {
      long remaining = t.counters().pop("views").orElse(0);
      assertThat(popped + remaining).isEqualTo((long) writers * THREADS * n);
    }
  }

  @Test
  void bucketsDrainedByEveryProcessAndThreadGrantExactlyTheirCapacity() throws Exception {
    int buckets = 400; // of 100 units each; every thread drains each in turn until denied
    Path go = dir.resolve("go");
    List<ChildJvm> children = start(CHILDREN, "drain", data().toString(), go.toString(),
        Integer.toString(THREADS), Integer.toString(buckets));
    long[] granted = new long[buckets];
    int[] processes = new int[buckets]; // how many processes were granted units of each bucket
    List<Long> perProcess = new ArrayList<>();
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
      for (ChildJvm c : children) {
        String[] f = c.await("GRANTED ", START_MILLIS).split(" ");
        long mine = 0;
        for (int b = 0; b < buckets; b++) {
          long g = Long.parseLong(f[b + 1]);
          granted[b] += g;
          mine += g;
          processes[b] += g > 0 ? 1 : 0;
        }
        perProcess.add(mine);
      }
    } finally {
      closeAll(children);
    }
    long shared = java.util.Arrays.stream(processes).filter(n -> n > 1).count();
    System.out.println(buckets + " buckets of 100 drained by " + CHILDREN + " processes x "
        + THREADS + " threads: units granted to each process " + perProcess + "; " + shared
        + " buckets shared by several processes");
    assertThat(shared).as("buckets several processes took units from").isPositive();
    for (int b = 0; b < buckets; b++) {
      assertThat(granted[b]).as("units granted from bucket %d", b).isEqualTo(100);
    }
    try (Tally t = Tally.open("file:" + data())) {
      assertThat(Worker.bucket(t, 0).available()).isZero();
      assertThat(Worker.bucket(t, buckets - 1).available()).isZero();
    }
  }

  /**
   * Leased handles in every process, on one token bucket: the log of every grant, at the instant
   * each lease decided it, never has more grants in an interval of length T than
   * {@code capacity + rate × (T + d)}, d the lease time.
   */
  @Test
  void leasedHandlesInEveryProcessStayWithinTheBucketsBoundPlusTheLeaseTime() throws Exception {
    Path go = dir.resolve("go");
    long millis = 1_500;
    List<ChildJvm> children = start(CHILDREN, "leased", data().toString(), go.toString(),
        Integer.toString(THREADS), Long.toString(millis));
    List<Long> grants = new ArrayList<>();
    List<Integer> perProcess = new ArrayList<>();
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
      for (ChildJvm c : children) {
        String[] f = c.await("LEASED", START_MILLIS).split(" ");
        for (int i = 1; i < f.length; i++) {
          grants.add(Long.parseLong(f[i]));
        }
        perProcess.add(f.length - 1);
      }
    } finally {
      closeAll(children);
    }
    java.util.Collections.sort(grants);
    long capacity = Worker.LEASED.limit();
    long nanosPerUnit = Worker.LEASED.intervalNanos();
    long lease = Worker.LEASE_TIME.toNanos();
    long worstSlack = Long.MAX_VALUE;
    for (int i = 0; i < grants.size(); i++) {
      for (int j = i; j < grants.size(); j++) {
        long bound = capacity + (grants.get(j) - grants.get(i) + lease) / nanosPerUnit;
        long seen = j - i + 1;
        worstSlack = Math.min(worstSlack, bound - seen);
        assertThat(seen).as("grants from %d to %d ns", grants.get(i), grants.get(j)).isLessThanOrEqualTo(bound);
      }
    }
    double span = (grants.get(grants.size() - 1) - grants.get(0)) / 1e9;
    System.out.printf("leased: %d grants over %.2f s by %d processes x %d threads %s; capacity + rate x span = %.0f;"
        + " least slack below the bound %d%n", grants.size(), span, CHILDREN, THREADS, perProcess,
        capacity + span * 1e9 / nanosPerUnit, worstSlack);
    // How many the bucket would have granted to demand that never paused, less what was granted:
    // permits parked in stocks, and on a loaded machine time the processes were not running.
    System.out.printf("leased: under-admission %.0f permits of %.0f%n",
        capacity + span * 1e9 / nanosPerUnit - grants.size(), capacity + span * 1e9 / nanosPerUnit);
    assertThat(grants.size()).as("the bucket refilled and was leased again").isGreaterThan((int) capacity);
    assertThat(perProcess.stream().filter(n -> n > 0).count()).as("processes granted permits").isGreaterThan(1);
  }

  @Test
  void duplicateOperationIdsFromEveryProcessAndThreadApplyOnce() throws Exception {
    int ids = 300;
    Path go = dir.resolve("go");
    List<ChildJvm> children = start(CHILDREN, "once", data().toString(), go.toString(),
        Integer.toString(THREADS), Integer.toString(ids));
    List<String> answers = new ArrayList<>();
    try {
      awaitAll(children, "READY");
      Files.createFile(go);
      awaitAll(children, "DONE");
      for (ChildJvm c : children) {
        assertThat(c.linesStartingWith("FAILED")).as("threads of process %d that disagreed", c.process().pid()).isEmpty();
        answers.add(c.await("ANSWERS ", START_MILLIS));
      }
    } finally {
      closeAll(children);
    }
    // Each id reached the store 8 times (4 processes x 2 threads), mostly at once: one applied,
    // and every caller got its answer, so every process saw the same answers, and the ids'
    // increments returned 1..300 between them.
    assertThat(answers).as("the answers each process got").containsOnly(answers.get(0));
    long[] got = java.util.Arrays.stream(answers.get(0).substring(8).split(" "))
        .mapToLong(Long::parseLong).sorted().toArray();
    assertThat(got).isEqualTo(java.util.stream.LongStream.rangeClosed(1, ids).toArray());
    try (Tally t = Tally.open("file:" + data())) {
      assertThat(t.counters().get("once")).hasValue(ids);
      assertThat(Worker.onceBucket(t).available()).as("units left of 1000 after %d acquires with ids", ids)
          .isEqualTo(1_000 - ids);
    }
  }
}
